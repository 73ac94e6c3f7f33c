// Dark and light themes: the stylesheet's colours are variables set per
// <html data-theme="dark|light">. The first visit follows the system's prefers-color-scheme;
// the header's toggle picks the other, kept in localStorage for the next visit (a theme is
// the screen's, not the session's, unlike the token).
import { useEffect, useState } from 'preact/hooks';

const kKey = 'gpufleet.theme';
const listeners = new Set();

function initial() {
  const kept = localStorage.getItem(kKey);
  if (kept === 'dark' || kept === 'light') return kept;
  return window.matchMedia && window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}

let theme = initial();
document.documentElement.dataset.theme = theme;

export function setTheme(next) {
  theme = next;
  localStorage.setItem(kKey, next);
  document.documentElement.dataset.theme = next;
  for (const listener of listeners) listener(next);
}

// The theme now, re-rendering the caller when it changes (the charts draw with its colours).
export function useTheme() {
  const [value, setValue] = useState(theme);
  useEffect(() => {
    listeners.add(setValue);
    return () => listeners.delete(setValue);
  }, []);
  return value;
}

// A colour variable of the stylesheet as the theme now sets it, for the canvas (uPlot).
export function cssColour(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}
