import gc
import os
import weakref

from gateway.protocol.process_sequence import ProcessSequence
from gateway.queues.message_ids import MessageIdFactory


def in_forked_child(report: object) -> str:
    """What ``report()`` returns in a forked child, as text."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child reports and exits at once
        os.write(writer, str(report()).encode())  # type: ignore[operator]
        os._exit(0)
    os.close(writer)
    os.waitpid(pid, 0)
    answer = os.read(reader, 256).decode()
    os.close(reader)
    return answer


def test_counts_from_one_under_a_token_of_its_own() -> None:
    first, second = ProcessSequence(), ProcessSequence()
    assert [first.next(), first.next()] == [1, 2]
    assert len(first.token) == 8 and first.token == first.token.upper()
    assert first.token != second.token


def test_a_forked_child_draws_a_new_token_and_starts_again() -> None:
    sequence = ProcessSequence()
    sequence.next()
    child = in_forked_child(lambda: f"{sequence.token} {sequence.next()}")
    token, number = child.split()
    assert token != sequence.token
    assert number == "1"
    assert sequence.next() == 2  # the parent's sequence is untouched


def test_message_ids_made_before_a_fork_differ_in_the_child() -> None:
    factory = MessageIdFactory()
    parent = factory.new_id(1)
    child = in_forked_child(lambda: factory.new_id(1))
    assert child.split("-")[1] != parent.split("-")[1]


def test_the_fork_hook_does_not_keep_sequences_alive() -> None:
    reference = weakref.ref(ProcessSequence())
    gc.collect()
    assert reference() is None
