#!/usr/bin/env bash
# TLS on the API's TCP port with a throwaway CA, and the client's settings: --server and
# --ca-file, the environment, a client settings file with two servers (the first one dead),
# and the errors a person meets (wrong CA, plain http to the TLS port, a token file others can
# read, a missing certificate).
source "$(dirname "$0")/lib.sh"

make_pki
pki=$WORK/pki

# A missing certificate named in the settings file stops `gpufleet up` at once, naming it.
printf '[up]\ntls_cert = "%s"\ntls_key = "%s"\n' "$pki/nope.pem" "$pki/server.key" >"$WORK/bad.toml"
if gf up --config "$WORK/bad.toml" --gpus sim:1xH100-80GB --data-dir "$WORK/bad" \
    --listen-socket "$WORK/bad.sock" --port 0 >"$WORK/err" 2>&1; then
  fail "gpufleet up started without its certificate"
fi
grep -q "TLS certificate file $pki/nope.pem: no such file" "$WORK/err" || fail "bad cert: $(cat "$WORK/err")"
ok "a missing certificate is named"

"$GPUFLEET" up --gpus sim:2xH100-80GB --data-dir "$WORK/data" --listen-socket "$GPUFLEET_SOCKET" \
  --port 0 --node-name e2e-node --tls-cert "$pki/server.pem" --tls-key "$pki/server.key" \
  >>"$WORK/up.log" 2>&1 &
UP_PID=$!
wait_for "gpufleet up to answer" "$GPUFLEET" nodes
port=$(sed -n 's|.*API URL: *https://127.0.0.1:\([0-9]*\)/api/v1|\1|p' "$WORK/up.log")
[ -n "$port" ] || fail "no https API URL in the log"
url=https://127.0.0.1:$port

gf --server "$url" --ca-file "$pki/ca.pem" nodes >"$WORK/out" || fail "nodes over TLS"
grep -q e2e-node "$WORK/out" || fail "nodes over TLS: $(cat "$WORK/out")"
curl -sf --cacert "$pki/ca.pem" "https://localhost:$port/api/v1/health" | jq -e '.status == "ok"' >/dev/null ||
  fail "curl over TLS"
ok "gpufleet --server https://... --ca-file ... nodes, and curl, over TLS"

GPUFLEET_SERVER=$url GPUFLEET_CA_FILE=$pki/ca.pem gf gpus --json | jq -e '.gpus | length == 2' >/dev/null ||
  fail "GPUFLEET_SERVER and GPUFLEET_CA_FILE"
ok "the environment names the server and the CA"

dead=1  # nothing listens on port 1: the connection is refused
cat >"$WORK/client.toml" <<TOML
[client]
servers = ["https://127.0.0.1:$dead", "https://localhost:$port"]
ca_file = "pki/ca.pem"
TOML
env -u GPUFLEET_SOCKET GPUFLEET_CLIENT_CONFIG="$WORK/client.toml" "$GPUFLEET" nodes --json |
  jq -e '.nodes[0].name == "e2e-node"' >/dev/null || fail "client.toml with a dead first server"
ok "client.toml: the dead first server is skipped, the second answers"

if gf --server "$url" --ca-file "$pki/other-ca.pem" nodes 2>"$WORK/err"; then fail "another CA was trusted"; fi
grep -q "is not trusted" "$WORK/err" || fail "wrong CA message: $(cat "$WORK/err")"
if gf --server "http://127.0.0.1:$port" nodes 2>"$WORK/err"; then fail "plain http was served"; fi
grep -q "speaks TLS only: use https://" "$WORK/err" || fail "plain http message: $(cat "$WORK/err")"
echo secret >"$WORK/token" && chmod 644 "$WORK/token"
if gf --server "$url" --ca-file "$pki/ca.pem" --token-file "$WORK/token" nodes 2>"$WORK/err"; then
  fail "a token file others can read was used"
fi
grep -q "chmod 600 $WORK/token" "$WORK/err" || fail "token file message: $(cat "$WORK/err")"
ok "wrong CA, plain http and an open token file are refused, each saying why"
