#!/usr/bin/env bash
# Recall by meaning against recall by words (issue 24): the labelled set of
# crates/hark-core/benches/recall/, FTS5 alone and the hybrid search side by side, then the
# costs (embedding, indexing 10,000 messages, the file's growth, query time at 10,000 and
# 100,000 messages, the model's resident memory). Fetches the embedding model first.
# Usage: scripts/bench-recall.sh   (HARK_BENCH_FUSION=min_similarity,question_penalty,words_bonus
# tries other settings)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
export HARK_MODELS_DIR="${HARK_MODELS_DIR:-$HOME/.cache/hark/models}"
scripts/fetch-models.sh minilm-l6 >/dev/null
exec cargo bench --locked -q -p hark-core --bench recall
