# The two commands of the README. Everything else: `.venv/bin/timerepro --help`.
.PHONY: setup reproduce test

setup:
	bash workflow/scripts/setup.sh

# Offline default: no network, no GPU. Regenerates every implemented artifact and the report.
reproduce: setup
	.venv/bin/snakemake --profile local

# The test suite (SLURM tests run when slurm-wlm is installed: workflow/scripts/install-slurm.sh).
test: setup
	.venv/bin/python -m pytest -q
