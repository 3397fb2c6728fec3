.PHONY: demo test bench lock clean

demo:
	scripts/demo

test:
	scripts/test

bench:
	scripts/bootstrap
	.venv/bin/python benchmarks/bench_core.py

lock:
	.tools/bin/uv lock

clean:
	rm -rf .venv .tools .mypy_cache .pytest_cache .ruff_cache
