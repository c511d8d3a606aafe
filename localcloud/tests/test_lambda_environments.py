"""Function environments as processes (localcloud.environments): the real runtime interface
client (awslambdaric) in the Lambda Python runtime's virtualenv (.venv-lambda), against the
local cloud's Runtime API."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import textwrap
import threading
import time
from pathlib import Path

import pytest

from localcloud.environments import (
    EnvironmentPool,
    Spec,
    TooManyRequests,
    default_runtime_python,
    environment,
    launcher,
)
from localcloud.environments.launcher import Process

PYTHON = default_runtime_python()
if not PYTHON.exists():
    pytest.skip(
        f"{PYTHON} is missing: `make bootstrap` makes it (it needs a Python 3.13)",
        allow_module_level=True,
    )

HANDLERS = """
import json, os, sys, time

def echo(event, context):
    return {"event": event, "request_id": context.aws_request_id, "pid": os.getpid()}

def variables(event, context):
    names = ["GREETING", "AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_VERSION",
             "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_LOG_GROUP_NAME", "_HANDLER",
             "AWS_REGION", "AWS_DEFAULT_REGION", "LAMBDA_TASK_ROOT", "AWS_ENDPOINT_URL",
             "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "TZ",
             "AWS_EXECUTION_ENV"]
    importable = {}
    for module in ("boto3", "localcloud", "moto"):
        try:
            __import__(module)
            importable[module] = True
        except ImportError:
            importable[module] = False
    return {"env": {n: os.environ.get(n) for n in names}, "importable": importable,
            "stream": os.environ["AWS_LAMBDA_LOG_STREAM_NAME"], "path0": sys.path[0],
            "memory": context.memory_limit_in_mb, "arn": context.invoked_function_arn}

def fail(event, context):
    raise ValueError("cannot take " + json.dumps(event))

def slow(event, context):
    time.sleep(event["sleep"])
    with open(event["path"], "w") as fh:
        fh.write("written after the sleep")
    return "done"

def hungry(event, context):
    held = b"x" * (event["mb"] << 20)  # written: resident at once
    time.sleep(1)
    with open(event["path"], "w") as fh:
        fh.write("written after the allocation")
    return len(held)

def busy(event, context):
    time.sleep(event.get("sleep", 0.3))
    return os.getpid()
"""


@pytest.fixture
def code(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(textwrap.dedent(HANDLERS))
    return tmp_path


def spec(code: Path, handler: str, **kwargs: object) -> Spec:
    return Spec(function_name=kwargs.pop("name", "Fn"), handler=handler, code_dir=code, **kwargs)  # type: ignore[arg-type]


def test_a_result_and_lambda_log_lines(code: Path) -> None:
    with EnvironmentPool(spec(code, "app.echo")) as pool:
        result = pool.invoke(b'{"a": 1}', "req-1")
        warm = pool.invoke(b'{"a": 2}', "req-2")
    body = json.loads(result.payload)
    assert body["event"] == {"a": 1} and body["request_id"] == "req-1"
    assert result.function_error is None and result.error_type is None
    assert result.init_duration_ms is not None and result.init_duration_ms > 0
    assert result.logs[0] == "START RequestId: req-1 Version: $LATEST"
    assert result.logs[-2] == "END RequestId: req-1"
    assert result.logs[-1].startswith("REPORT RequestId: req-1\tDuration: ")
    assert "\tInit Duration: " in result.logs[-1]
    # the same environment, warm: no Init Duration
    assert warm.pid == result.pid == body["pid"] and warm.init_duration_ms is None
    assert "Init Duration" not in warm.logs[-1]


def test_each_function_sees_its_own_variables(code: Path) -> None:
    credentials = {
        "AWS_ACCESS_KEY_ID": "AKIAFN",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_SESSION_TOKEN": "token",
    }
    one = spec(
        code,
        "app.variables",
        name="One",
        variables={"GREETING": "hello"},
        credentials=credentials,
        endpoint_url="http://127.0.0.1:4566",
        memory_mb=256,
    )
    two = spec(code, "app.variables", name="Two", variables={"GREETING": "bonjour"})
    with EnvironmentPool(one) as first, EnvironmentPool(two) as second:
        a = json.loads(first.invoke(b"{}").payload)
        b = json.loads(second.invoke(b"{}").payload)
    assert a["env"]["GREETING"] == "hello" and b["env"]["GREETING"] == "bonjour"
    assert a["env"] | {"GREETING": None} == {
        "GREETING": None,
        "AWS_LAMBDA_FUNCTION_NAME": "One",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
        "AWS_LAMBDA_LOG_GROUP_NAME": "/aws/lambda/One",
        "_HANDLER": "app.variables",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "LAMBDA_TASK_ROOT": str(code),
        "AWS_ENDPOINT_URL": "http://127.0.0.1:4566",
        **credentials,
        "TZ": ":UTC",
        "AWS_EXECUTION_ENV": "AWS_Lambda_python3.13",
    }
    assert b["env"]["AWS_LAMBDA_FUNCTION_NAME"] == "Two" and b["env"]["AWS_ACCESS_KEY_ID"] is None
    # the runtime's boto3, nothing of the local cloud
    assert a["importable"] == {"boto3": True, "localcloud": False, "moto": False}
    assert a["path0"] == str(code) and a["memory"] == "256"
    assert a["arn"] == "arn:aws:lambda:us-east-1:123456789012:function:One"
    assert "/[$LATEST]" in a["stream"]


SDK_PROBE = """\
import sys, time
PRELOADED = "boto3" in sys.modules  # before the function's own import
import boto3
def handler(event, context):
    time.sleep(event.get("sleep", 0))
    return {"preloaded": PRELOADED, "boto3": boto3.__file__}
"""


def test_a_first_environment_has_the_runtimes_sdk_unless_it_brings_its_own(
    tmp_path: Path,
) -> None:
    """The first environment of a configuration is forked from a server that imported the
    runtime's boto3, unless the function's path has a boto3 or botocore of its own: then its
    own is the one it imports, as on Lambda (the task root comes first); so are the next ones
    (forked from the configuration's server)."""
    runtime, own = tmp_path / "runtime", tmp_path / "own"
    for code in (runtime, own):
        code.mkdir()
        (code / "app.py").write_text(SDK_PROBE)
    (own / "boto3").mkdir()
    (own / "boto3" / "__init__.py").write_text("")
    with (
        EnvironmentPool(spec(runtime, "app.handler", name="RuntimeSdk")) as first,
        EnvironmentPool(spec(own, "app.handler", name="OwnSdk")) as second,
    ):
        a = json.loads(first.invoke(b"{}").payload)
        b = json.loads(second.invoke(b"{}").payload)
        busy = threading.Thread(target=second.invoke, args=(b'{"sleep": 1}',))
        busy.start()  # the warm environment is busy: the next invocation starts another
        time.sleep(0.3)
        c = json.loads(second.invoke(b"{}").payload)
        busy.join(10)
    assert a["preloaded"] is True and ".venv-lambda" in a["boto3"]
    assert b == {"preloaded": False, "boto3": str(own / "boto3" / "__init__.py")}
    assert c == b  # its own code is never preloaded, nor the runtime's boto3 before it


STAGED = """\
import os, time
import stage_lib  # a library that reads STAGE when imported
def handler(event, context):
    time.sleep(event.get("sleep", 0))
    return {"server": os.getppid(), "stage": stage_lib.STAGE, "note": os.environ["NOTE"]}
"""


def test_configurations_share_a_fork_server_unless_a_library_read_their_difference(
    tmp_path: Path,
) -> None:
    """Functions of one code and layers whose variables differ only in ones no library read
    when preloaded (NOTE) are forked from one server; one whose library read a variable
    with another value (STAGE) gets a server of its own, so it still reads its own."""
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "app.py").write_text(STAGED)
    (tmp_path / "layer" / "python").mkdir(parents=True)
    (tmp_path / "layer" / "python" / "stage_lib.py").write_text(
        "import os\nSTAGE = os.environ['STAGE']\n"
    )

    def pool(name: str, stage: str) -> EnvironmentPool:
        variables = {"STAGE": stage, "NOTE": name}
        layers = [tmp_path / "layer"]
        return EnvironmentPool(spec(tmp_path / "code", "app.handler", name=name,
                                    variables=variables, layers=layers))  # fmt: skip

    with pool("a", "blue") as a, pool("b", "blue") as b, pool("c", "green") as c:
        json.loads(a.invoke(b"{}").payload)  # a first environment: it reports its libraries
        first_b = json.loads(b.invoke(b"{}").payload)  # b's own server, preloaded as blue
        first_c = json.loads(c.invoke(b"{}").payload)  # green: not b's server
        busy = threading.Thread(target=a.invoke, args=(b'{"sleep": 1}',))
        busy.start()  # a's warm environment is busy: the next invocation starts another
        time.sleep(0.3)
        second_a = json.loads(a.invoke(b"{}").payload)
        busy.join(10)
    assert (first_b["stage"], first_c["stage"], second_a["stage"]) == ("blue", "green", "blue")
    assert (first_b["note"], first_c["note"], second_a["note"]) == ("b", "c", "a")
    assert second_a["server"] == first_b["server"] != first_c["server"]


PRELOAD_PROBE = """\
import os, time
import probe_lib  # a library: where it was imported
def handler(event, context):
    time.sleep(event.get("sleep", 0))
    return {"preloaded": probe_lib.IMPORTED_IN != os.getpid()}
"""


def _ran_once(tmp_path: Path, library: str, monkeypatch: pytest.MonkeyPatch) -> Spec:
    """A function importing ``probe_lib`` (``library``'s source, in a layer), run once by an
    earlier process: what it imported is learned, and this process has learned nothing."""
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "app.py").write_text(PRELOAD_PROBE)
    (tmp_path / "layer" / "python").mkdir(parents=True)
    (tmp_path / "layer" / "python" / "probe_lib.py").write_text(library)
    probe = spec(tmp_path / "code", "app.handler", layers=[tmp_path / "layer"])
    with EnvironmentPool(probe) as earlier:
        assert json.loads(earlier.invoke(b"{}").payload) == {"preloaded": False}
    monkeypatch.setattr(launcher, "LEARNED", {})  # the next process: nothing learned in it
    monkeypatch.setattr(environment, "LEARNED", launcher.LEARNED)
    return probe


def test_what_an_earlier_process_learned_preloads_the_first_environments_of_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The libraries a configuration's first environment imported are kept in the cache, so
    in the next process (another test worker, the next `localcloud up`) even its first
    environments, started together before any of them has answered, are forked from a server
    that imported them already. Records unused for a week are removed."""
    monkeypatch.setenv("LOCALCLOUD_CACHE", str(tmp_path / "cache"))
    imports = tmp_path / "cache" / "imports"
    imports.mkdir(parents=True)
    for name, age in (("unused.json", 8 * 86400), ("used.json", 6 * 86400)):
        (imports / name).write_text("{}")
        os.utime(imports / name, (time.time() - age,) * 2)
    probe = _ran_once(tmp_path, "import os\nIMPORTED_IN = os.getpid()\n", monkeypatch)
    answers: list[dict[str, bool]] = []
    with EnvironmentPool(probe) as pool:
        calls = [threading.Thread(target=lambda: answers.append(
            json.loads(pool.invoke(b'{"sleep": 0.5}').payload))) for _ in range(2)]  # fmt: skip
        for call in calls:
            call.start()
        for call in calls:
            call.join(20)
    assert answers == [{"preloaded": True}] * 2
    # a record no environment used for a week is removed; the others are kept
    assert not (imports / "unused.json").exists() and (imports / "used.json").exists()
    assert len(list(imports.glob("*.json"))) == 2


def test_a_library_that_starts_a_thread_of_its_own_is_not_preloaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fork keeps only the forking thread: a library that starts one when imported (a
    native one, as pyarrow's jemalloc does, unknown to ``threading``) is imported by each
    environment itself, never by a fork server (Python warns of deadlocks otherwise)."""
    monkeypatch.setenv("LOCALCLOUD_CACHE", str(tmp_path / "cache"))
    library = (
        "import _thread, os, time\nIMPORTED_IN = os.getpid()\n"
        "_thread.start_new_thread(time.sleep, (600,))\n"
    )
    with EnvironmentPool(_ran_once(tmp_path, library, monkeypatch)) as pool:
        assert json.loads(pool.invoke(b"{}").payload) == {"preloaded": False}


def test_environments_run_and_end_when_the_cloud_holds_over_1024_descriptors(code: Path) -> None:
    """A cloud serving a burst holds many descriptors (each environment's log pipe, Runtime
    API socket and process handle): past 1024 (select's limit) an environment still runs,
    answers and is stopped."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2048:
        pytest.skip(f"the descriptor limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2048), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        with EnvironmentPool(spec(code, "app.echo")) as pool:
            cold, warm = pool.invoke(b'{"a": 1}'), pool.invoke(b'{"a": 2}')
            environment = pool._idle[0]
        assert json.loads(cold.payload)["event"] == {"a": 1}, cold.logs
        assert json.loads(warm.payload)["event"] == {"a": 2}, warm.logs
        assert environment.dead
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_an_ended_environments_pid_is_never_signalled_again() -> None:
    """pids are reused (32768 of them here): ending an environment whose process has ended
    does not kill the process group that has its pid now."""
    ended = subprocess.Popen(["sleep", "0.2"], start_new_session=True)
    process = Process(ended.pid)  # an environment's process, as a fork server answers it
    ended.wait()
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        process.pid = other.pid  # the pid as another process group's now
        process.kill()
        assert other.poll() is None
    finally:
        os.killpg(other.pid, signal.SIGKILL)
        other.wait()
    assert other.returncode == -signal.SIGKILL


def test_a_missing_module_is_lambdas_import_module_error(code: Path) -> None:
    with EnvironmentPool(spec(code, "missing.handler")) as pool:
        result = pool.invoke(b"{}")
        again = pool.invoke(b"{}")
    assert result.function_error == "Unhandled"
    assert json.loads(result.payload) == {
        "errorMessage": "Unable to import module 'missing': No module named 'missing'",
        "errorType": "Runtime.ImportModuleError",
        "requestId": "",
        "stackTrace": [],
    }
    assert any(
        "[ERROR] Runtime.ImportModuleError: Unable to import" in line for line in result.logs
    )
    assert "Status: error\tError Type: Runtime.ImportModuleError" in result.logs[-1]
    # the runtime's memory, read before it exited (Lambda reports it too)
    assert int(result.logs[-1].split("Max Memory Used: ")[1].split(" MB")[0]) > 0
    # every invocation fails the same way, each in a new environment
    assert again.error_type == "Runtime.ImportModuleError" and again.pid != result.pid


def test_a_missing_handler_is_handler_not_found(code: Path) -> None:
    with EnvironmentPool(spec(code, "app.nothing")) as pool:
        result = pool.invoke(b"{}")
    assert json.loads(result.payload)["errorType"] == "Runtime.HandlerNotFound"
    assert json.loads(result.payload)["errorMessage"] == "Handler 'nothing' missing on module 'app'"


def test_a_handler_exception_is_reported_as_lambda_does(code: Path) -> None:
    with EnvironmentPool(spec(code, "app.fail")) as pool:
        result = pool.invoke(b'{"n": 1}', "req-err")
    error = json.loads(result.payload)
    assert result.function_error == "Unhandled" and result.error_type == "ValueError"
    assert error["errorType"] == "ValueError"
    assert error["errorMessage"] == 'cannot take {"n": 1}'
    assert error["requestId"] == "req-err"
    # the handler's frames only: neither the runtime's nor the local cloud's
    assert len(error["stackTrace"]) == 1
    assert error["stackTrace"][0].startswith(f'  File "{code / "app.py"}", line ')
    assert "in fail" in error["stackTrace"][0]
    assert any(line.startswith("[ERROR] ValueError: cannot take") for line in result.logs)


def test_a_timeout_kills_the_environment(code: Path) -> None:
    marker = code / "after-sleep.txt"
    event = json.dumps({"sleep": 0.8, "path": str(marker)}).encode()
    with EnvironmentPool(spec(code, "app.slow", timeout=0.2)) as pool:
        result = pool.invoke(event, "req-slow")
        assert pool.size == 0
    assert result.error_type == "Sandbox.Timedout" and result.function_error == "Unhandled"
    assert json.loads(result.payload)["errorMessage"] == (
        "RequestId: req-slow Error: Task timed out after 0.20 seconds"
    )
    assert result.logs[-3].endswith(" req-slow Task timed out after 0.20 seconds")
    assert result.logs[-1].endswith("\tStatus: timeout")
    with pytest.raises(ProcessLookupError):
        os.kill(result.pid, 0)
    time.sleep(0.9)  # past the moment the handler would have written the file
    assert not marker.exists()


def test_memory_past_memory_size_stops_the_environment(code: Path) -> None:
    """MemorySize is a limit on the environment: past it, the process is killed (nothing it
    would do afterwards happens) and the invocation is Runtime.OutOfMemory, as on Lambda."""
    marker = code / "after-allocation.txt"
    event = json.dumps({"mb": 300, "path": str(marker)}).encode()
    with EnvironmentPool(spec(code, "app.hungry", memory_mb=128, timeout=5)) as pool:
        result = pool.invoke(event, "req-oom")
        within = pool.invoke(json.dumps({"mb": 1, "path": str(code / "ok.txt")}).encode())
    assert result.error_type == "Runtime.OutOfMemory" and result.function_error == "Unhandled"
    assert json.loads(result.payload)["errorMessage"] == (
        "RequestId: req-oom Error: Runtime exited with error: signal: killed"
    )
    assert result.logs[-1].endswith("\tStatus: error\tError Type: Runtime.OutOfMemory")
    assert int(result.logs[-1].split("Max Memory Used: ")[1].split(" MB")[0]) > 128
    with pytest.raises(ProcessLookupError):
        os.kill(result.pid, 0)
    time.sleep(1.1)  # past the moment the handler would have written the file
    assert not marker.exists()
    assert within.error_type is None and (code / "ok.txt").exists()  # a new environment


def test_concurrent_invocations_get_environments_of_their_own(code: Path) -> None:
    results: list[int] = []

    def invoke(pool: EnvironmentPool) -> None:
        results.append(json.loads(pool.invoke(b'{"sleep": 0.3}').payload))

    with EnvironmentPool(spec(code, "app.busy")) as pool:
        threads = [threading.Thread(target=invoke, args=(pool,)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(set(results)) == 2 and pool.size == 2
        warm = pool.invoke(b'{"sleep": 0}')
    assert warm.init_duration_ms is None and json.loads(warm.payload) in results


def test_reserved_concurrency_throttles(code: Path) -> None:
    with EnvironmentPool(spec(code, "app.busy", reserved_concurrency=1)) as pool:
        first = threading.Thread(target=pool.invoke, args=(b'{"sleep": 0.5}',))
        first.start()
        deadline = time.monotonic() + 5
        while pool.size == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        with pytest.raises(TooManyRequests) as throttled:
            pool.invoke(b'{"sleep": 0}')
        first.join()
        assert json.loads(pool.invoke(b'{"sleep": 0}').payload)  # free again
    assert throttled.value.message == "Rate Exceeded."
    assert throttled.value.reason == "ReservedFunctionConcurrentInvocationLimitExceeded"


def test_reserved_concurrency_zero_throttles_every_invocation(code: Path) -> None:
    with (
        EnvironmentPool(spec(code, "app.echo", reserved_concurrency=0)) as pool,
        pytest.raises(TooManyRequests),
    ):
        pool.invoke(b"{}")
