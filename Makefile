# Two commands do everything: `make lab` and `make test`. Both create .venv when it is
# missing (or when requirements.txt / pyproject.toml changed) and install the package
# into it in editable mode, so every notebook kernel started from it imports `companion`.

PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed
NB     ?=
PORT   ?= 8866
PREHEAT ?= all
SITE_DIR ?= build/site
ONLY   ?=
STUDENT_DIR ?= dist/student
SUBMISSIONS ?=
OUT ?= grades.csv
GRADE_TIMEOUT ?= 600
PYTEST_ARGS ?=
# Two pytest workers (pytest-xdist), one test module or notebook each at a time
# (--dist loadscope keeps a notebook's cells in order in one kernel): on 2 cores the
# suite leaves about half the CPU idle while ranks start and wait, and two workers take
# it from about 9.5 to about 6.5 minutes there. JOBS=1 runs everything in one process.
JOBS ?= 2
XDIST = $(if $(filter-out 0 1,$(JOBS)),-n $(JOBS) --dist loadscope,)
# The real-browser tests re-run every notebook twice more (JupyterLab, then Voila; the
# README's "For developers" has the times). CI runs them (it sets CI=true, and .ci/run passes BROWSER=1);
# a student's `make test` stays at unit tests plus notebooks unless asked (BROWSER=1).
BROWSER ?= $(if $(filter true 1 yes,$(CI)),1,0)

.PHONY: lab present slides site test test-fast notebooks browser bench student grade gpu-check \
        clean-venv help translations translations-check

help:
	@echo "make lab        create .venv if needed, open JupyterLab on notebook 00"
	@echo "                EDITION=zh-CN (or zh-TW) opens the Chinese edition (README.zh-CN.md)"
	@echo "make translations   write notebooks/zh-CN, zh-TW from notebooks/ + translations/zh-CN"
	@echo "make translations-check  change nothing; fail naming each cell that drifted"
	@echo "make test       create .venv if needed, run unit tests and every notebook (nbval);"
	@echo "                BROWSER=1 (set under CI) adds the real-browser tests"
	@echo "make test-fast  unit tests only"
	@echo "make present    serve the whole course on http://127.0.0.1:8866: a landing page listing"
	@echo "                every notebook (lectures, goals), each opening as a dashboard (Voila);"
	@echo "                notebooks run at start so heavy cells are done when opened"
	@echo "                (PREHEAT='07 08' to warm only those, PREHEAT= for none; PORT=...)"
	@echo "make present NB=03  serve notebook 03 alone as a dashboard (Voila: widgets, no code)"
	@echo "make site       execute every notebook into $(SITE_DIR)/ as static HTML with plots and"
	@echo "                widget state (the offline fallback; ONLY='00 11' for some)"
	@echo "make slides NB=03   present notebook 03 as slides with live widgets (Voila, reveal.js;"
	@echo "                Space / Shift+Space to move, Esc for the overview)"
	@echo "make browser    only the real-browser tests (needs Debian's chromium)"
	@echo "make bench      run the benchmarks in benchmarks/ (prints tables)"
	@echo "make gpu-check  the GPU readiness checks in tests/gpu/ (NCCL, cuda:0, allocator vs"
	@echo "                ZeRO formula; < 5 min on one GPU); without CUDA every test skips"
	@echo "make student    write the notebooks without their solutions to $(STUDENT_DIR)/"
	@echo "                (STUDENT_DIR=... to choose; nbgrader's solution marks)"
	@echo "make grade SUBMISSIONS=DIR  run each student's notebooks (DIR/<student>/*.ipynb) in fresh"
	@echo "                kernels, check every exercise on real ranks; write $(OUT) and"
	@echo "                $(basename $(OUT))-feedback/<student>.md (OUT=..., GRADE_TIMEOUT=s per notebook)"

$(STAMP): requirements.txt pyproject.toml setup.py
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 10), "Python 3.10+ needed, found " + sys.version.split()[0]'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# Jupyter refuses to run as root unless told; containers and CI machines often are root.
ROOT_FLAG = $(if $(filter 0,$(shell id -u)),--allow-root,)

# EDITION=zh-CN or zh-TW opens the Chinese edition; any other value, English.
# (Not LANG: that is the shell's locale, set on most machines.)
EDITION ?= en
LAB_DIR = notebooks$(if $(filter zh-CN zh-TW,$(EDITION)),/$(EDITION),)

lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 $(ROOT_FLAG) $(LAB_DIR)/00_launching_ranks.ipynb

# The Chinese edition, generated from the English notebooks and translations/zh-CN/*.json.
translations: $(STAMP)
	$(BIN)/python -m companion.tools.i18n_build

translations-check: $(STAMP)
	$(BIN)/python -m companion.tools.i18n_build --check

# Without NB: the whole course behind a landing page made from the notebooks' own headers
# (companion/tools/present). With NB: one notebook, as before.
present: $(STAMP)
ifeq ($(strip $(NB)),)
	$(BIN)/python -m companion.tools.present serve --port $(PORT) --preheat "$(PREHEAT)"
else
	@nb=$$(ls notebooks/$(NB)_*.ipynb 2>/dev/null | head -1); \
	if [ -z "$$nb" ]; then echo "no notebook notebooks/$(NB)_*.ipynb; use e.g. make present NB=03"; exit 2; fi; \
	echo "presenting $$nb (code hidden; Ctrl-C to stop)"; \
	$(BIN)/voila "$$nb" --Voila.ip=127.0.0.1 --port=$(PORT) --theme=light
endif

# Static HTML of every executed notebook (executed into $(SITE_DIR)/executed, never in place).
site: $(STAMP)
	$(BIN)/python -m companion.tools.present site --out $(SITE_DIR) $(if $(strip $(ONLY)),--only "$(ONLY)",)

# Slides: Voila's reveal template, with reveal.js's CSS from companion/tools/slides/ so that
# nothing is fetched from the internet; cells run on load as for `make present`.
slides: $(STAMP)
	@nb=$$(ls notebooks/$(NB)_*.ipynb 2>/dev/null | head -1); \
	if [ -z "$$nb" ]; then echo "no notebook notebooks/$(NB)_*.ipynb; use e.g. make slides NB=03"; exit 2; fi; \
	echo "slides of $$nb (Space: next, Shift+Space: back, Esc: overview; Ctrl-C to stop)"; \
	$(BIN)/python -m companion.tools.slides --present "$$nb" --Voila.ip=127.0.0.1

browser: $(STAMP)
	$(BIN)/python -m pytest tests/browser $(PYTEST_ARGS)

# Unit tests and notebooks first, the slower real-browser tests last. Tests marked `ci`
# (each student notebook run up to its first exercise check) come with BROWSER=1 too.
test: $(STAMP)
ifeq ($(BROWSER),1)
	$(BIN)/python -m pytest --ignore=tests/browser $(XDIST) $(PYTEST_ARGS)
	$(BIN)/python -m pytest tests/browser $(PYTEST_ARGS)
else
	$(BIN)/python -m pytest --ignore=tests/browser -m "not ci" $(XDIST) $(PYTEST_ARGS)
	@echo "Real-browser tests and the student-release runs (marked ci) not run here; CI runs them: make test BROWSER=1."
endif

test-fast: $(STAMP)
	$(BIN)/python -m pytest tests --ignore=tests/browser $(XDIST) $(PYTEST_ARGS)

notebooks: $(STAMP)
	$(BIN)/python -m pytest notebooks $(XDIST) $(PYTEST_ARGS)

bench: $(STAMP)
	@for b in benchmarks/*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

# GPU readiness: tests/gpu/ runs only where torch sees CUDA and a GPU; without them every
# test skips with one reason and this exits 0, but GPUs visible to a CPU build of torch fail
# it (tests/gpu/gpu_setup.py). COMPANION_GPU_CHECK_DEVICE=cpu dry-runs the same tests with
# gloo on the CPU. A GPU machine usually brings its own Python with a CUDA build of torch,
# and the pinned CPU wheel is the wrong build there: when $(PYTHON)'s torch has CUDA, the
# check runs on it with the repository on the path, installs nothing and needs no nbval.
gpu-check:
	@if $(PYTHON) -c 'import torch, sys; sys.exit(torch.version.cuda is None)' 2>/dev/null; then \
	    echo "gpu-check on $(PYTHON): its torch has CUDA; the repository on the path, nothing installed"; \
	    PYTHONPATH="$(CURDIR)$${PYTHONPATH:+:$$PYTHONPATH}" $(PYTHON) -m pytest -p no:cacheprovider \
	        -o addopts="" tests/gpu $(PYTEST_ARGS); \
	else \
	    $(MAKE) --no-print-directory $(STAMP) && $(BIN)/python -m pytest tests/gpu $(PYTEST_ARGS); \
	fi

# The student release: nbgrader-marked solutions replaced by `raise NotImplementedError()`.
student: $(STAMP)
	$(BIN)/python -m companion.tools.release notebooks $(STUDENT_DIR)

# The grader (README "Grading"): a CSV row per (student, exercise) and a feedback file each.
grade: $(STAMP)
	@if [ -z "$(SUBMISSIONS)" ]; then echo "make grade needs SUBMISSIONS=DIR: a folder with one folder per student"; exit 2; fi
	$(BIN)/python -m companion grade "$(SUBMISSIONS)" --out "$(OUT)" --timeout $(GRADE_TIMEOUT)

clean-venv:
	rm -rf $(VENV)
