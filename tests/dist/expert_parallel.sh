#!/usr/bin/env bash
# Expert parallelism under mpirun (docs/scale-out.md): teacher-forced logits and greedy ids of
# `generate --expert-parallel` with NP ranks are bit-identical to one process, for f32, bf16,
# NVFP4 and MLX affine fixtures and Inkling 2 (Mini's NVFP4 + MXFP8, Small's MXFP8), with MTP drafts and in both numerics modes; a rank killed mid-run
# makes rank 0 exit with a clear error within --ep-timeout; another model folder or another
# --numerics on a rank is refused by rank 0.
# With MAKER and TOKENIZER_DIR (make_tiny_chat_model, tests/data/inkling), `serve` too.
# Usage: expert_parallel.sh INKLING FIXTURES NP [MAKER TOKENIZER_DIR]. Exit 77 (skipped) when
# mpirun is missing.
set -u
INKLING=$(realpath "$1") FIX=$(realpath "$2") NP=$3 MAKER=${4:-} TOKDIR=${5:-}
if ! command -v mpirun >/dev/null; then
  echo "SKIP: mpirun not found (apt-get install openmpi-bin)"
  exit 77
fi
MPIRUN=(mpirun -np "$NP" --oversubscribe)
[ "$(id -u)" = 0 ] && MPIRUN+=(--allow-run-as-root)
# Open MPI's single-copy shared-memory path (CMA) is slow on some VMs (docs/scale-out.md);
# ASan's leak check would flag MPI's own allocations at exit.
export OMPI_MCA_btl_vader_single_copy_mechanism=none ASAN_OPTIONS=${ASAN_OPTIONS:-}:detect_leaks=0
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
ids_of() { python3 -c "import json,sys;print(json.load(open(sys.argv[1]))['ids'])" "$1"; }

# The pid of rank R of the mpirun with pid MP, once it runs (empty after 10 s).
rank_pid() {
  for _ in $(seq 100); do
    for p in $(pgrep -P "$1"); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2" &&
        echo "$p" && return
    done
    sleep 0.1
  done
}

# name script pattern: an MPMD launch of `script` on every rank must fail with a line matching
# `pattern` on stderr.
expect_refused() {
  chmod +x "$2"
  "${MPIRUN[@]}" "$2" >"$TMP/refused.out" 2>"$TMP/refused.err"
  if [ $? = 0 ]; then
    bad "$1: mpirun exited 0"
  elif ! grep -q "$3" "$TMP/refused.err"; then
    bad "$1: no clear error: $(head -5 "$TMP/refused.err")"
  else
    echo "ok: $1 refused: $(grep -m1 "$3" "$TMP/refused.err" | cut -c1-160)"
  fi
}

# name model-dir prompt-json [extra generate args]
check_same() {
  local name=$1 dir=$2 prompt=$3
  shift 3
  local ids
  ids=$(python3 -c "import json,sys;print(','.join(map(str,json.load(open(sys.argv[1]))['prompt_ids'][:16])))" "$prompt")
  local args=(generate -m "$dir" --token-ids "$ids" -n 6 --temp 0 --json -t 1 "$@")
  local dump=(--dump-logits)
  [[ " $* " == *" --draft "* ]] && dump=()  # --draft takes no logits dump; ids only
  "$INKLING" "${args[@]}" ${dump:+"${dump[@]}" "$TMP/$name.1.npy"} >"$TMP/$name.1.json" ||
    { bad "$name: single process failed"; return; }
  "${MPIRUN[@]}" "$INKLING" "${args[@]}" ${dump:+"${dump[@]}" "$TMP/$name.n.npy"} \
    --expert-parallel --ep-timeout 20 >"$TMP/$name.n.json" 2>"$TMP/$name.err"
  local rc=$?  # 139 with nothing on stderr: mpirun itself crashed (seen once in Open MPI's teardown)
  [ $rc = 0 ] ||
    { bad "$name: mpirun -np $NP failed (exit $rc): $(tail -3 "$TMP/$name.err")"; return; }
  if [ ${#dump[@]} -gt 0 ] && ! cmp -s "$TMP/$name.1.npy" "$TMP/$name.n.npy"; then
    bad "$name: teacher-forced logits differ from one process"
  elif [ "$(ids_of "$TMP/$name.1.json")" != "$(ids_of "$TMP/$name.n.json")" ]; then
    bad "$name: greedy ids differ: $(ids_of "$TMP/$name.1.json") vs $(ids_of "$TMP/$name.n.json")"
  else
    echo "ok: $name -np $NP bit-identical (ids $(ids_of "$TMP/$name.n.json"))"
  fi
}

# inspect --expert-parallel NP (no MPI): one line per rank, the experts split e mod NP.
plan=$("$INKLING" inspect -m "$FIX/full/hf" --expert-parallel "$NP")
if [ "$(grep -c '^  rank [0-9]*: ' <<<"$plan")" != "$NP" ] ||
  ! grep -q "rank $((NP - 1)): *$((8 / NP)) routed experts" <<<"$plan"; then  # 8 experts
  bad "inspect --expert-parallel $NP: $plan"
else
  echo "ok: inspect --expert-parallel $NP prints $NP ranks"
fi

# Every fixture at -np 2; at -np 3 (each rank owns a non-contiguous set) the quantized ones.
check_same f32 "$FIX/full/hf" "$FIX/full/ref/prompt.json"
check_same nvfp4 "$FIX/quant_nvfp4/model" "$FIX/quant_nvfp4/ref/prompt.json"
check_same mlx4 "$FIX/quant_mlx4/model" "$FIX/quant_mlx4/ref/prompt.json"
# Inkling 2 Mini as released (NVFP4 + MXFP8 experts, looped core: each visit of a core layer asks
# the same expert owners).
check_same inkling2-mini-q "$FIX/inkling2_loop_q/hf" "$FIX/inkling2_loop_q/ref/prompt.json"
if [ "$NP" = 2 ]; then
  check_same bf16 "$FIX/bf16/og" "$FIX/bf16/ref/prompt.json"
  check_same mtp "$FIX/mtp/multi" "$FIX/full/ref/prompt.json" --draft 2
  # The default is fast: the expert ranks bind the kernels of rank 0's mode (exact here).
  check_same mlx4-exact "$FIX/quant_mlx4/model" "$FIX/quant_mlx4/ref/prompt.json" --numerics exact
  check_same bf16-exact "$FIX/bf16/og" "$FIX/bf16/ref/prompt.json" --numerics exact
  check_same inkling2-small "$FIX/inkling2_mxfp8/tf" "$FIX/inkling2_mxfp8/ref/prompt.json"
fi

# serve: rank 0 serves HTTP with continuous batching (two requests at once), the other ranks
# follow; the completions equal one process's.
serve_text() {  # PORT one|ep: prints the texts of two concurrent greedy completions
  local port=$1 cmd=("$INKLING")
  [ "$2" = ep ] && cmd=("${MPIRUN[@]}" "$INKLING")
  local flags=(serve -m "$TMP/chat" --port "$port" --parallel 2 -t 1)
  [ "$2" = ep ] && flags+=(--expert-parallel --ep-timeout 20)
  "${cmd[@]}" "${flags[@]}" >"$TMP/serve.$port" 2>&1 &
  local pid=$! clients=()
  for _ in $(seq 100); do grep -qs listening "$TMP/serve.$port" && break; sleep 0.1; done
  for i in 1 2; do
    python3 - "$port" "$i" >"$TMP/serve.$port.$i" 2>&1 <<'EOS' &
import json, sys, urllib.request
port, i = sys.argv[1], int(sys.argv[2])
req = {"prompt": [[5, 17, 99], [7, 300, 41, 12]][i - 1], "max_tokens": 6, "temperature": 0}
r = urllib.request.urlopen(urllib.request.Request(
    f"http://127.0.0.1:{port}/v1/completions", json.dumps(req).encode(),
    {"Content-Type": "application/json"}), timeout=30)
print(json.load(r)["choices"][0]["text"].encode("unicode_escape").decode())
EOS
    clients+=($!)
  done
  for c in "${clients[@]}"; do wait "$c" || echo "client failed: $(tail -1 "$TMP/serve.$port")"; done
  # A graceful stop: SIGTERM to rank 0 (mpirun would end every rank at once).
  local target=$pid
  [ "$2" = ep ] && target=$(rank_pid $pid 0)
  kill -TERM $target
  wait $pid 2>/dev/null
  cat "$TMP/serve.$port.1" "$TMP/serve.$port.2"
}
if [ "$NP" = 2 ] && [ -n "$MAKER" ]; then
  "$MAKER" "$TMP/chat" "$TOKDIR" >/dev/null || bad "serve: cannot make the chat model"
  port=$((20000 + RANDOM % 20000))
  one=$(serve_text $port one)
  many=$(serve_text $((port + 1)) ep)
  if [ -z "$one" ] || [[ "$one" == *"failed"* ]] || [ "$one" != "$many" ]; then
    bad "serve: completions differ: '$one' vs '$many'"
  else
    echo "ok: serve -np $NP: two concurrent completions equal one process's: $(echo $many)"
  fi
fi

# A rank killed (SIGKILL, -np 2) or hung (SIGSTOP, -np 3) mid-run: rank 0 reports it within
# --ep-timeout (2 s) and aborts the job. On a killed rank mpirun would end the job itself (naming
# the rank); --enable-recovery stops it doing so, so that rank 0's own deadline is what is tested
# (mpirun then exits 0 whatever its ranks return, so only the hung case checks the exit code).
# The victim is stopped once rank 0 prints tokens (past MPI's start-up and the handshake, which
# may take a while on a loaded machine), so the deadline under test is the exchange's.
# `startup`: a rank hung before MPI's start-up completes (stopped as soon as it exists), which
# would block MPI_Init_thread on every rank for ever: rank 0 reports it within --ep-timeout. Under
# load the stop may come just after the start-up instead, before the rank reports its model:
# then the handshake's deadline fires, and rank 0 ends the job (MPI_Finalize would wait for the
# stopped rank for ever).
stop_rank() {
  local sig=$1 name=$2 extra=()
  [ "$sig" = KILL ] && extra=(--enable-recovery)
  local start=$(date +%s)
  "${MPIRUN[@]}" "${extra[@]}" "$INKLING" generate -m "$FIX/full/hf" --token-ids 1,2,3 \
    -n 1000000 -c 2000000 --logit-bias 498=-100 --temp 0 -t 1 --expert-parallel \
    --ep-timeout 2 >"$TMP/$name.out" 2>"$TMP/$name.err" &
  local mp=$!
  local victim=$(rank_pid $mp $((NP - 1))) want="rank $((NP - 1)) did not answer"
  # Stopped before the handshake's message at the latest: the start-up's deadline or the
  # handshake's.
  [ "$name" = startup ] &&
    want="(rank [0-9]+: MPI start-up did not complete|rank $((NP - 1)) did not report its model)"
  if [ "$name" != startup ]; then
    for _ in $(seq 600); do [ -s "$TMP/$name.out" ] && break; sleep 0.1; done
    [ -s "$TMP/$name.out" ] || bad "$name rank: rank 0 printed nothing in 60 s"
  fi
  [ -n "$victim" ] && kill "-$sig" "$victim"
  # Never a hang: give up after 60 s. (Once rank 0 has reported and exited, mpirun still has to
  # end the stopped rank; beside the rest of `ctest -j2` on 2 cores that once took over 30 s.)
  for _ in $(seq 600); do kill -0 $mp 2>/dev/null || break; sleep 0.1; done
  if kill -0 $mp 2>/dev/null; then
    kill -KILL $mp
    [ -n "$victim" ] && kill -KILL "$victim" 2>/dev/null
    bad "$name rank: mpirun still running after 60 s: $(head -3 "$TMP/$name.err")"
    return
  fi
  wait $mp
  local rc=$? elapsed=$(($(date +%s) - start))
  if [ -z "$victim" ]; then
    bad "$name rank: rank $((NP - 1)) not found"
  elif [ $rc = 0 ] && [ "$sig" != KILL ]; then
    bad "$name rank: mpirun exited 0"
  elif ! grep -Eq "error: \[expert-parallel\] $want" "$TMP/$name.err"; then
    bad "$name rank: no clear error from rank 0: $(head -5 "$TMP/$name.err")"
  else
    echo "ok: $name rank reported (${elapsed}s, exit $rc): $(grep -m1 'expert-parallel' "$TMP/$name.err")"
  fi
}
[ "$NP" = 2 ] && stop_rank KILL killed
[ "$NP" -ge 3 ] && stop_rank STOP hung
[ "$NP" -ge 3 ] && stop_rank STOP startup

# Another model folder on the last rank (same tensors, another config.json): refused on rank 0.
if [ "$NP" -ge 3 ]; then
  mkdir -p "$TMP/other"
  ln -s "$FIX/full/hf/model.safetensors" "$TMP/other/model.safetensors"
  sed 's/"rms_norm_eps": [0-9.e-]*/"rms_norm_eps": 0.001/' "$FIX/full/hf/config.json" \
    >"$TMP/other/config.json"
  cmp -s "$FIX/full/hf/config.json" "$TMP/other/config.json" && bad "mismatch: config unchanged"
  cat >"$TMP/pick.sh" <<EOS
#!/bin/sh
d="$FIX/full/hf"
[ "\$OMPI_COMM_WORLD_RANK" = $((NP - 1)) ] && d="$TMP/other"
exec "$INKLING" generate -m "\$d" --token-ids 1,2,3 -n 2 --temp 0 -t 1 --expert-parallel
EOS
  expect_refused "mismatched model" "$TMP/pick.sh" "rank $((NP - 1)) (host .*) has a different model"
fi
# Another --numerics on the last rank (an MPMD launch): refused on rank 0.
if [ "$NP" = 2 ]; then
  cat >"$TMP/pick_numerics.sh" <<EOS
#!/bin/sh
n=fast
[ "\$OMPI_COMM_WORLD_RANK" = $((NP - 1)) ] && n=exact
exec "$INKLING" generate -m "$FIX/full/hf" --token-ids 1,2,3 -n 2 --temp 0 -t 1 --numerics "\$n" \
  --expert-parallel
EOS
  expect_refused "mismatched numerics" "$TMP/pick_numerics.sh" \
    "rank $((NP - 1)) (host .*) runs --numerics exact, rank 0 fast"
fi
exit $((fails > 0))
