#!/usr/bin/env bash
# One lent-GPU session, end to end (see docs/ACCURACY.md): build on the GPU machine with the
# header-only Debian packages carried in .deps/, run the [gpu] tests, measure the kernel suite
# (materialised and flash attention) and a GPT-2-small training step, calibrate, and leave every
# result under $OUT (default: gpu-out/). Usage: tests/tools/gpu_session.sh [steps...]
# steps: build tests check suite gpt2 calibrate blind blind-steps torch (default: the first six)
#   blind       the blind kernel set of tests/data/blind (issue #24), counters on, every node checked
#   blind-steps the blind training steps and inference runs (tests/data/blind/README.md)
#   payoff      recompute strategies and flash attention, as predicted in tests/data/payoff (issue #23)
#   small       the small-kernel fit set and launch chains of tests/data/small (counters on the set),
#               and the two small checked steps again with the untraced step timing (no checks)
#   sealed      the steps of tests/data/small/sealed.txt, timed, written and never printed: held-out
#               data for a later round (tests/data/small/README.md)
#   inference   the LLM prefill and decode steps of tests/data/inference/cases.txt (issue #17), timed
#               untraced, no checks; predictions committed beforehand in tests/data/inference/
#   vision      PyTorch eager fp32 steps of torchvision's zoo (tests/tools/torch_vision_bench.py):
#               inference at batch 1 and 32, training at 32; held out (tests/data/public/README.md)
#   host        measure/host_probe.py: this machine's PyTorch eager host (tests/data/hosts/)
#   conv        fp32 convolutions (synthetic fit set, torchvision's as validation), SGEMMs and the
#               gap between dependent kernels, with the kernels chosen (tests/tools/torch_conv_sweep.py)
#   torch       PyTorch eager fp32 op latencies and Hugging Face steps (tests/tools/torch_ops_bench.py;
#               TORCH_ARGS adds options, e.g. "--seconds-per-op 12 --e2e-seconds 60")
# A build made elsewhere for sm_90 (build-gpu/roofline, build-gpu/roofline-gpu,
# build-gpu/tests/roofline_gpu_tests, carried) is used as it is when it runs: leave 'build' out of
# the steps. The device tool sends at most 64 MiB of working tree, and the committed measurements
# alone are about that: before a call, untrack what the session does not need there and restore
# it after (nothing is committed in between):
#   cp .git/info/exclude /tmp/exclude.bak
#   git rm -r -q --cached tests/data/measured tests/data/public tests/data/blind tests/data/onnx
#   printf '/tests/data/measured/\n/tests/data/public/\n/tests/data/blind/\n/tests/data/onnx/\n' >> .git/info/exclude
#   ... the call ...
#   git reset -q && cp /tmp/exclude.bak .git/info/exclude
set -uo pipefail
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
steps=${*:-build tests check suite gpt2 calibrate}
B=build-gpu
R=./$B/roofline
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }
has() { [[ " $steps " == *" $1 "* ]]; }

if has build; then
  log build
  if [ -d .deps ] && [ ! -d /tmp/deps ]; then for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done; fi
  cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=/tmp/deps/usr -DROOFLINE_BUILD_BENCH=OFF -DROOFLINE_WERROR=OFF \
    -DCMAKE_CUDA_ARCHITECTURES=90-real > "$OUT/configure.log" 2>&1 || { tail -30 "$OUT/configure.log"; exit 1; }
  cmake --build $B -j 16 --target roofline roofline_gpu_tests > "$OUT/build.log" 2>&1 || { grep -E "error|FAILED" -A5 "$OUT/build.log" | head -80; exit 1; }
fi
# A carried build looks for the CUDA libraries where the toolkit or PyTorch's wheels keep them.
for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
# roofline-gpu (what measure and calibrate run) is the one that loads them.
RG=./$B/roofline-gpu
if ! has build && [ -x "$RG" ] && ! "$RG" --version > /dev/null 2>&1; then
  # else PyTorch's CUDA wheels (nvidia-cuda-runtime, nvidia-cublas, nvidia-cuda-cupti) hold them
  for lib in libcudart.so.13 libcublasLt.so.13 libcupti.so.13; do
    d=$(find /usr/local /opt -name "$lib" 2>/dev/null | head -1)
    [ -n "$d" ] && export LD_LIBRARY_PATH="$(dirname "$d"):$LD_LIBRARY_PATH"
  done
  "$RG" --version > /dev/null 2>&1 || { echo "carried $RG does not run here:"; ldd "$RG" | grep "not found"; }
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$OUT/nvidia-smi.csv" 2>&1
if has tests; then
  log "gpu tests"
  timeout 240 ./$B/tests/roofline_gpu_tests --reporter compact > "$OUT/gpu-tests.log" 2>&1; echo "gpu tests exit $?" | tee -a "$OUT/session.log"
  grep -E "failed|FAILED|passed|SKIP" "$OUT/gpu-tests.log" | tail -40
fi
if has check; then
  log "check: small training step, every node against the CPU reference"
  timeout ${CHECK_TIMEOUT:-150} $R measure gpt2-small --mode training --batch 2 --seq 128 --repetitions 3 --counters off -o "$OUT/check-gpt2-small-train.json" 2>&1 | tail -5
  timeout 60 $R measure examples/two-layer-mlp.json --mode training --repetitions 3 --counters off -o "$OUT/check-mlp-train.json" 2>&1 | tail -5
fi
if has suite; then
  log "kernel suite (materialised attention)"
  $R measure tests/data/suite/kernel-suite.json --check ${SUITE_CHECK:-on} --repetitions 30 -o "$OUT/suite.json" 2>&1 | tail -4
  log "kernel suite (flash attention)"
  $R measure tests/data/suite/kernel-suite.json --check off --flash --repetitions 30 -o "$OUT/suite-flash.json" 2>&1 | tail -4
fi
if has conv; then
  log "fp32 convolutions, SGEMMs and dependent-kernel gaps (PyTorch eager, TF32 off)"
  timeout ${CONV_TIMEOUT:-260} python3 tests/tools/torch_conv_sweep.py "$OUT/conv" ${CONV_ARGS:-} 2>&1 | tail -8
fi
if has gpt2; then
  log "gpt2-small training step"
  timeout 120 $R measure gpt2-small --mode training --batch 8 --seq 1024 --check off --counters off --repetitions 10 -o "$OUT/gpt2-small-train.json" 2>&1 | tail -4
  log "gpt2-small training step with counters (smaller: kernel replay saves and restores memory)"
  timeout ${COUNTERS_TIMEOUT:-240} $R measure gpt2-small --mode training --batch 4 --seq 512 --check off --repetitions 5 -o "$OUT/gpt2-small-train-b4s512.json" 2>&1 | tail -4
fi
if has blind; then
  log "blind kernels"
  $R measure tests/data/blind/blind-kernels.json --check on --repetitions 20 -o "$OUT/blind-kernels.json" 2>&1 | tail -4
fi
if has blind-steps; then
  # name | model and shape arguments (the same as tests/data/blind/README.md's predictions)
  while IFS='|' read -r name margs; do
    [ -z "$name" ] && continue
    log "blind step $name"
    timeout 200 $R measure $margs --check off --counters off --repetitions 5 --warmup 2 -o "$OUT/$name.json" 2>&1 | tail -3
  done < tests/data/blind/steps.txt
fi
if has payoff; then
  # name | model arguments | analyze-only | measure-only (tests/data/payoff/README.md)
  while IFS='|' read -r name margs _ measure_args; do
    [ -z "$name" ] && continue
    log "payoff $name"
    timeout 200 $R measure $margs $measure_args --memory reuse --check off --counters off --repetitions 5 --warmup 2 -o "$OUT/payoff-$name.json" 2>&1 | tail -3
  done < tests/data/payoff/cases.txt
fi
if has small; then
  log "small-kernel fit set (training step, counters on)"
  timeout 200 $R measure tests/data/small/small-train.json --mode training --check off --repetitions 20 -o "$OUT/small-train.json" 2>&1 | tail -4
  for op in add matmul layernorm; do
    log "launch chain $op"
    timeout 60 $R measure tests/data/small/chain-$op.json --check off --counters off --repetitions 20 -o "$OUT/chain-$op.json" 2>&1 | tail -4
  done
  log "elementwise sweep"
  timeout 60 $R measure tests/data/small/elementwise-sweep.json --check off --repetitions 20 -o "$OUT/elementwise-sweep.json" 2>&1 | tail -4
  log "small steps, untraced step timing"
  $R measure gpt2-small --mode training --batch 2 --seq 128 --check off --counters off --repetitions 10 -o "$OUT/gpt2-small-train-b2s128.json" 2>&1 | tail -4
  $R measure examples/two-layer-mlp.json --mode training --check off --counters off --repetitions 20 -o "$OUT/mlp-train-b32.json" 2>&1 | tail -4
fi
if has sealed; then
  mkdir -p "$OUT/sealed"
  while IFS='|' read -r name margs; do
    [ -z "$name" ] && continue
    log "sealed $name"
    timeout 120 $R measure $margs --check off --counters off --repetitions 10 -q -o "$OUT/sealed/$name.json" > /dev/null 2>&1; echo "sealed $name exit $?"
  done < tests/data/small/sealed.txt
fi
if has inference; then
  mkdir -p "$OUT/inference"
  while IFS='|' read -r name margs; do
    [ -z "$name" ] && continue
    log "inference $name"
    timeout 120 $R measure $margs --check off --counters off --repetitions 10 --warmup 3 -o "$OUT/inference/$name.json" 2>&1 | tail -2
  done < tests/data/inference/cases.txt
fi
if has vision; then
  log "pytorch eager torchvision steps"
  PYTHONUNBUFFERED=1 timeout ${VISION_TIMEOUT:-200} python3 tests/tools/torch_vision_bench.py "$OUT/vision" --seconds $(( ${VISION_TIMEOUT:-200} - 20 )) 2>&1 | grep -v Warning | tail -60
fi
if has host; then
  log "eager host probe"
  PYTHONUNBUFFERED=1 timeout 120 python3 measure/host_probe.py "$OUT/host.json" --name "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) VM" 2>&1 | tail -5
fi
if has torch; then
  log "pytorch eager ops and Hugging Face steps"
  PYTHONUNBUFFERED=1 timeout 420 python3 tests/tools/torch_ops_bench.py "$OUT/torch" --configs tests/data/public/neusight/configs ${TORCH_ARGS:-} 2>&1 | grep -v Warning | tail -40
fi
if has calibrate; then
  log calibrate
  $R calibrate -o "$OUT/h100-calibrated.json" --raw "$OUT/calibration.json" 2>&1 | tail -40
fi
log done
# The device tool returns a few files only: pack the results into one.
(cd "$OUT" && tar czf results.tgz --exclude results.tgz --exclude build.log *.json *.log *.csv $(ls -d torch sealed inference vision 2>/dev/null) 2>/dev/null)
