import os
import re

from gateway.protocol.request_ids import new_request_id

REQUEST_ID = re.compile(r"[0-9A-F]{24}")


def test_request_ids_look_like_the_services() -> None:
    assert REQUEST_ID.fullmatch(new_request_id())


def test_request_ids_do_not_repeat() -> None:
    ids = [new_request_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)


def test_a_forked_child_draws_its_own_sequence() -> None:
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child reports its first id and exits at once
        os.write(writer, new_request_id().encode())
        os._exit(0)
    os.close(writer)
    os.waitpid(pid, 0)
    child = os.read(reader, 64).decode()
    os.close(reader)
    parent = new_request_id()
    assert REQUEST_ID.fullmatch(child)
    assert child[8:16] != parent[8:16]  # a different process token
