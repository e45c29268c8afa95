#!/usr/bin/env bash
# Run here, from the repo root, after ../shared/gpu/stage.sh: adds to .gpu/ the wheels that the GPU suite's oracle
# and MuJoCo tests import and the GPU machine lacks (mujoco 3.3.7 with glfw and PyOpenGL, minatar, mpe2), and what
# the teams benchmarks run there: jaxmarl 0.2.0 (the SMAX and MPE peer and oracle) and what JaxMARL's baseline
# scripts import beyond the machine's JAX, flax, optax and chex (distrax with TFP, hydra-core and omegaconf), as
# CPython 3.12 wheels; .gpu/remote.sh installs every wheel in .gpu/ there. With JAXMARL_CHECKOUT=PATH (a checkout of
# github.com/FLAIROx/JaxMARL) its baselines/ are copied to .gpu/JaxMARL/, the --jaxmarl-repo of
# benchmarks/peers/jaxmarl_baselines.py there (the scripts are not in jaxmarl's wheel).
set -euo pipefail
[ -f .gpu/remote.sh ] || { echo "run ../shared/gpu/stage.sh first (it makes .gpu/)"; exit 1; }
download() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .gpu "$@"
}
download mujoco==3.3.7 glfw pyopengl minatar==1.0.15 mpe2==1.1.1
download jaxmarl==0.2.0 distrax==0.1.9 tfp-nightly==0.26.0.dev20261027 dm-tree gast decorator hydra-core==1.3.8 \
  omegaconf==2.3.1
# omegaconf's parser runtime is published as a source archive only: built here into a (pure-Python) wheel
python3 -m pip wheel -q --no-deps -w .gpu antlr4-python3-runtime==4.9.3
if [ -n "${JAXMARL_CHECKOUT:-}" ]; then
  rm -rf .gpu/JaxMARL && mkdir -p .gpu/JaxMARL && cp -r "$JAXMARL_CHECKOUT/baselines" .gpu/JaxMARL/
fi
du -sh .gpu
