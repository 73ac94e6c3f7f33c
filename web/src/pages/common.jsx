// Small pieces every page uses.
export function Loading({ what }) {
  return <p class="muted">Loading {what}…</p>;
}

export function ErrorNote({ error }) {
  return (
    <p class="error" role="alert">
      {error.code ? <code>{error.code}</code> : null} {error.message}
    </p>
  );
}

export function NeedSignIn() {
  return (
    <p class="note">
      This page needs to know who you are: <a href="#/signin">sign in with a token</a>.
    </p>
  );
}

export function StateBadge({ state }) {
  return <span class={`badge job-${state.toLowerCase()}`}>{state}</span>;
}
