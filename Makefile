.PHONY: demo test check bench lock clean

demo:
	scripts/demo

test:
	scripts/test

check:
	scripts/check

bench:
	scripts/bootstrap
	.venv/bin/python benchmarks/bench_core.py

lock:
	.tools/bin/uv lock

clean:
	rm -rf .venv .tools .mypy_cache .pytest_cache .ruff_cache
