"""A session's own thread: results, errors, context, cancellation, idle exit, close, a
caller lingering on a short job, and the processors the two are held to meanwhile."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
from collections.abc import Awaitable, Callable, Iterator

import anyio
import anyio.from_thread
import anyio.lowlevel
import pytest

from codeact.executors._placement import Placement
from codeact.executors._threads import SessionThread

pytestmark = pytest.mark.anyio

REQUEST = contextvars.ContextVar("request", default="none")


async def test_jobs_run_in_one_thread_of_their_own_in_order() -> None:
    thread = SessionThread("test-session")
    try:
        seen = [
            await thread.run(lambda n=n: (n, threading.current_thread().name)) for n in range(5)
        ]
    finally:
        thread.close()
    assert [n for n, _ in seen] == [0, 1, 2, 3, 4]
    assert {name for _, name in seen} == {"test-session"}
    assert threading.current_thread().name != "test-session"


async def test_an_error_reaches_the_waiting_task_and_the_thread_goes_on() -> None:
    thread = SessionThread("test-errors")

    def fail() -> None:
        raise ValueError("from the thread")

    try:
        with pytest.raises(ValueError, match="from the thread"):
            await thread.run(fail)
        assert await thread.run(lambda: 42) == 42
    finally:
        thread.close()


async def test_the_job_sees_the_callers_context_variables() -> None:
    thread = SessionThread("test-context")
    REQUEST.set("call-7")
    try:
        assert await thread.run(REQUEST.get) == "call-7"
    finally:
        thread.close()


async def test_a_cancelled_wait_abandons_the_job_and_the_next_one_runs_after_it() -> None:
    thread = SessionThread("test-cancel")
    release, finished = threading.Event(), threading.Event()

    def slow() -> str:
        release.wait(30)
        finished.set()
        return "late"

    try:
        with anyio.move_on_after(0.1) as scope:
            await thread.run(slow)
        assert scope.cancelled_caught  # the task stopped waiting; the job did not stop
        assert not finished.is_set()
        release.set()
        assert await thread.run(lambda: "next") == "next"
        assert finished.is_set()  # the abandoned job ran to its end first
    finally:
        thread.close()


async def test_an_idle_thread_ends_and_a_later_job_starts_a_new_one() -> None:
    thread = SessionThread("test-idle", idle_seconds=0.05)
    try:
        first = await thread.run(threading.get_ident)
        with anyio.fail_after(10):
            while any(t.name == "test-idle" for t in threading.enumerate()):
                await anyio.sleep(0.02)
        second = await thread.run(lambda: threading.current_thread().name)
        assert second == "test-idle"
        assert isinstance(first, int)
    finally:
        thread.close()


async def test_a_closed_thread_ends_and_refuses_new_jobs() -> None:
    thread = SessionThread("test-close")
    assert await thread.run(lambda: 1) == 1
    thread.close()
    with anyio.fail_after(10):
        while any(t.name == "test-close" for t in threading.enumerate()):
            await anyio.sleep(0.02)
    with pytest.raises(RuntimeError, match="closed"):
        await thread.run(lambda: 2)


class Held:
    """Something only a job's context refers to (an agent, say, behind a context variable)."""


async def test_an_idle_thread_keeps_nothing_of_its_last_job_alive() -> None:
    import gc
    import weakref

    thread = SessionThread("test-holds-nothing")
    held = Held()
    token = REQUEST.set(held)  # type: ignore[arg-type]
    try:
        assert await thread.run(lambda: isinstance(REQUEST.get(), Held))
        REQUEST.reset(token)
        gone = weakref.ref(held)
        del held
        gc.collect()
        assert any(t.name == "test-holds-nothing" for t in threading.enumerate())  # still idle
        assert gone() is None, "the idle thread still refers to its last job's context"
    finally:
        thread.close()


async def test_a_lingering_caller_takes_a_short_jobs_result_without_a_turn_of_the_loop() -> None:
    thread = SessionThread("test-linger")
    thread.linger_seconds = 30.0  # whatever the machine's load, the job ends within it
    loop_turned = threading.Event()

    def fail() -> None:
        raise ValueError("from a lingered job")

    try:
        for job, expected in ((lambda: 7, 7), (fail, None)):
            loop_turned.clear()
            asyncio.get_running_loop().call_soon(loop_turned.set)
            if expected is None:
                with pytest.raises(ValueError, match="lingered job"):
                    await thread.run(job, linger=True)
            else:
                assert await thread.run(job, linger=True) == expected
            assert not loop_turned.is_set()  # the result came before the loop went round
            await anyio.lowlevel.checkpoint()
            assert loop_turned.is_set()
    finally:
        thread.close()


async def test_a_job_that_needs_the_loop_sends_a_lingering_caller_back_to_it() -> None:
    thread = SessionThread("test-linger-release")
    thread.linger_seconds = 60.0  # a caller not sent back holds the loop past the bound
    token = anyio.lowlevel.current_token()

    async def on_loop() -> str:
        await anyio.lowlevel.checkpoint()
        return "answered on the loop"

    def needs_the_loop() -> str:
        thread.release_caller()
        return anyio.from_thread.run(on_loop, token=token)

    try:
        with anyio.fail_after(20):
            assert await thread.run(needs_the_loop, linger=True) == "answered on the loop"
            assert thread.lingering  # sent back is not outlasting the moment
    finally:
        thread.close()


async def lingering_beside(
    thread: SessionThread, job: Callable[[], str], on_loop: Callable[[], Awaitable[None]]
) -> str:
    """``job``'s result, its caller lingering, while ``on_loop`` runs on the caller's loop."""
    results: list[str] = []

    async def wait() -> None:
        results.append(await thread.run(job, linger=True))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wait)
        tasks.start_soon(on_loop)
    return results[0]


async def test_a_job_that_outlasts_the_moment_turns_lingering_off_until_a_wait_proves_short() -> (
    None
):
    thread = SessionThread("test-linger-off")
    thread.linger_seconds = 0.01
    release = threading.Event()

    def slow() -> str:
        release.wait(30)  # set by the loop, which runs only once the caller stopped lingering
        return "slow"

    async def release_once_the_loop_turns() -> None:
        await anyio.lowlevel.checkpoint()
        release.set()

    try:
        assert await lingering_beside(thread, slow, release_once_the_loop_turns) == "slow"
        assert not thread.lingering
        thread.linger_seconds = 3600.0  # the next wait, on the loop, surely fits it
        assert await thread.run(lambda: "short", linger=True) == "short"
        assert thread.lingering
    finally:
        thread.close()


placement = pytest.mark.skipif(
    not Placement().enabled, reason="this platform cannot place a thread on a processor"
)


@pytest.fixture
def all_processors() -> Iterator[set[int]]:
    """The test's thread free to run on every processor it may (whatever an earlier test
    left), those processors; its own set is given back after."""
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, range(os.cpu_count() or 1))
    yield os.sched_getaffinity(0)
    os.sched_setaffinity(0, own)


@placement
async def test_a_lingering_handoff_holds_the_caller_to_its_processor_and_gives_it_back(
    all_processors: set[int],
) -> None:
    thread = SessionThread("test-placement")
    thread.linger_seconds = 30.0  # whatever the machine's load, the job ends within it
    caller = threading.get_native_id()
    before = all_processors

    def observe() -> tuple[set[int], set[int]]:
        return os.sched_getaffinity(caller), os.sched_getaffinity(0)

    try:
        seen = [await thread.run(observe, linger=True) for _ in range(20)]
        after = os.sched_getaffinity(0)
    finally:
        thread.close()
    for caller_during, job_during in seen:
        assert len(caller_during) == 1  # held to one processor for the handoff
        assert caller_during <= before
        assert job_during == before  # the job runs with the processors it had
    assert after == before  # given back before the caller went on


@placement
async def test_a_caller_keeps_a_narrow_set_of_processors_it_had(all_processors: set[int]) -> None:
    before = all_processors
    narrow = {max(before)}
    thread = SessionThread("test-placement-narrow")
    thread.linger_seconds = 30.0
    os.sched_setaffinity(0, narrow)
    try:
        for _ in range(5):
            assert await thread.run(lambda: 1, linger=True) == 1
            assert os.sched_getaffinity(0) == narrow  # neither widened nor lost
    finally:
        thread.close()
        os.sched_setaffinity(0, before)


@placement
async def test_a_caller_that_does_not_linger_is_never_held(all_processors: set[int]) -> None:
    thread = SessionThread("test-placement-off")
    caller = threading.get_native_id()
    before = all_processors
    try:
        seen = [await thread.run(lambda: os.sched_getaffinity(caller)) for _ in range(5)]
    finally:
        thread.close()
    assert seen == [before] * 5


@placement
async def test_a_job_that_outlasts_the_moment_holds_nothing_while_it_runs(
    all_processors: set[int],
) -> None:
    thread = SessionThread("test-placement-long")
    thread.linger_seconds = 0.01
    before = all_processors
    release = threading.Event()
    job_thread: list[int] = []
    started_by_job: list[set[int]] = []

    def long_job() -> str:
        job_thread.append(threading.get_native_id())
        child = threading.Thread(target=lambda: started_by_job.append(os.sched_getaffinity(0)))
        child.start()
        child.join()
        release.wait(30)  # set by the loop, which runs only once the caller went back to it
        return "done"

    async def check_while_it_runs() -> None:
        with anyio.fail_after(20):
            while not job_thread:
                await anyio.sleep(0.005)
        try:
            assert os.sched_getaffinity(0) == before  # the loop's thread runs free
            assert os.sched_getaffinity(job_thread[0]) == before  # so does the job
        finally:
            release.set()

    try:
        assert await lingering_beside(thread, long_job, check_while_it_runs) == "done"
    finally:
        thread.close()
    assert started_by_job == [before]  # a thread the job starts inherits nothing held


@placement
def test_callers_on_many_loops_at_once_each_get_back_their_own_processors(
    all_processors: set[int],
) -> None:
    before = all_processors
    masks = [set(before), {min(before)}, {max(before)}, set(before)]
    got: dict[int, list[set[int]]] = {}
    failures: list[BaseException] = []

    def caller(index: int) -> None:
        os.sched_setaffinity(0, masks[index])
        thread = SessionThread(f"test-placement-{index}")
        thread.linger_seconds = 30.0

        async def runs() -> list[set[int]]:
            seen = []
            for n in range(200):
                assert await thread.run(lambda n=n: n, linger=True) == n
                seen.append(os.sched_getaffinity(0))
            return seen

        try:
            got[index] = asyncio.run(runs())
        except BaseException as error:  # reported by the test's own thread
            failures.append(error)
        finally:
            thread.close()

    callers = [threading.Thread(target=caller, args=(i,)) for i in range(len(masks))]
    for started in callers:
        started.start()
    for started in callers:
        started.join(60)
    assert not failures, failures
    assert {i: {frozenset(m) for m in seen} for i, seen in got.items()} == {
        i: {frozenset(mask)} for i, mask in enumerate(masks)
    }
