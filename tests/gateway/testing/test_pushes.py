"""The shipped push recorder: its answers (pure, no server), then raw mode over real HTTP."""

from __future__ import annotations

import http.client
import socket
import struct
import threading
from collections.abc import Iterator

import pytest

from gateway.testing import Answer, PushRecorder
from gateway.testing.answers import Answers


def test_the_script_is_answered_in_turn_then_the_default() -> None:
    answers = Answers(204)
    answers.script([500, Answer(502, b"<h1>down</h1>", "text/html")])

    statuses = [answers.next()[0] for _ in range(3)]

    assert statuses == [Answer(500), Answer(502, b"<h1>down</h1>", "text/html"), Answer(204)]


def test_a_held_answer_waits_for_a_release_with_a_bound() -> None:
    answers = Answers(max_hold=0.05)
    answers.hold()
    answer, seen = answers.next()
    assert answer.held
    assert answers.wait_released(seen) is False  # nobody released: it gave up

    answers.release()

    assert answers.wait_released(seen)
    assert not answers.next()[0].held  # released: no longer holding


def test_a_release_before_the_wait_is_not_missed() -> None:
    answers = Answers(max_hold=5)
    answers.script([Answer(500, held=True)])
    answer, seen = answers.next()
    answers.release()  # between the request's arrival and its wait
    assert answer.held and answers.wait_released(seen)


def test_reset_forgets_the_script_and_releases() -> None:
    answers = Answers(500)
    answers.script([503])
    answers.hold()
    answers.reset()
    assert answers.next()[0] == Answer(204)


@pytest.fixture()
def raw() -> Iterator[PushRecorder]:
    with PushRecorder.raw(max_hold=10) as recorder:
        yield recorder


def _post(url: str, path: str, body: bytes) -> tuple[int, bytes, str | None]:
    connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=10)
    try:
        connection.request("POST", path, body, {"x-mns-message-id": "M1"})
        response = connection.getresponse()
        return response.status, response.read(), response.getheader("Content-Type")
    finally:
        connection.close()


def test_a_raw_recorder_records_unsigned_bytes_and_answers_the_script(raw: PushRecorder) -> None:
    raw.answer(Answer(502, b"<html>oops</html>", "text/html"))

    first = _post(raw.url, "/hook?a=1", b"not a notification")
    second = _post(raw.url, "/hook", b"again")

    assert first == (502, b"<html>oops</html>", "text/html")
    assert second[0] == 204
    pushes = raw.wait_for(2, path="/hook")
    assert [(push.body, push.verified, push.message_id) for push in pushes] == [
        (b"not a notification", False, "M1"),
        (b"again", False, "M1"),
    ]
    assert raw.connections == 2


def test_a_held_request_is_recorded_at_once_and_answered_on_release(raw: PushRecorder) -> None:
    raw.hold()
    answered: list[int] = []
    poster = threading.Thread(target=lambda: answered.append(_post(raw.url, "/", b"x")[0]))
    poster.start()

    raw.wait_for(1)  # arrived while held
    assert answered == []
    raw.release()
    poster.join(10)

    assert answered == [204]


def test_an_answer_whose_pusher_hung_up_is_counted_not_printed(
    raw: PushRecorder, capsys: pytest.CaptureFixture[str]
) -> None:
    raw.hold()
    pusher = socket.create_connection(("127.0.0.1", int(raw.url.rsplit(":", 1)[1])), timeout=10)
    pusher.sendall(b"POST /hook HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx")
    raw.wait_for(1, path="/hook")
    # Gone at once with a reset, as a pusher whose timeout passed may be: the answer's first
    # write then fails.
    pusher.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    pusher.close()
    raw.release()

    raw.wait_closed(1)
    assert raw.hung_up == 1
    assert "Traceback" not in capsys.readouterr().err
    assert _post(raw.url, "/", b"y")[0] == 204  # and the endpoint answers the next push


def test_a_verifying_recorder_refuses_an_unsigned_post() -> None:
    with PushRecorder("http://127.0.0.1:1/certs/") as recorder:
        recorder.status = 500
        assert _post(recorder.url, "/notifications", b"<Notification/>")[0] == 403
        [push] = recorder.received
        assert not push.verified and push.error
        with pytest.raises(AssertionError, match="0 of 1 verified"):
            recorder.wait_for(1, timeout=0.05)
