"""A refused form only renders its page (issue 47, defect 5): over real HTTP against a real
``mns-gateway serve``, refused forms whose ``back`` names the sign-in page never count as failed
sign-ins, so they cannot lock the address out of the console.

Before, the refused form's page was rendered by calling its view inside the POST: the sign-in
view's POST branch ran, each refusal was a failed sign-in, and the sixth locked the address
(429 for five minutes, for everyone behind one proxy).
"""

from __future__ import annotations

import re

import pytest
import requests
from mns.queue import QueueMeta

from tests.conftest import ACCESS_KEY_ID, ACCESS_KEY_SECRET, RunningGateway, gateway_fixture

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

gateway = gateway_fixture("refused-back")

_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
#: One more than the sign-in limit (five failures in five minutes).
REFUSALS = 6


def _token(session: requests.Session, url: str) -> str:
    match = _TOKEN.search(session.get(url, timeout=10).text)
    assert match, f"no CSRF token on {url}"
    return match.group(1)


def _signed_in(base: str) -> tuple[requests.Session, str]:
    session = requests.Session()
    token = _token(session, f"{base}/console/sign-in")
    response = session.post(
        f"{base}/console/sign-in",
        data={
            "csrf_token": token,
            "access_key_id": ACCESS_KEY_ID,
            "access_key_secret": ACCESS_KEY_SECRET,
        },
        allow_redirects=False,
        timeout=10,
    )
    assert response.status_code == 302, response.text[:300]
    return session, _token(session, f"{base}/console/sign-in")


def test_refused_forms_sent_back_to_sign_in_do_not_lock_it(gateway: RunningGateway) -> None:
    gateway.account().get_queue("jobs").create(QueueMeta())
    base = gateway.url
    session, token = _signed_in(base)
    refusals = [
        session.post(
            f"{base}/console/queues/jobs/send",
            data={"csrf_token": token, "body": "x", "priority": "99", "back": "/console/sign-in"},
            allow_redirects=False,
            timeout=10,
        )
        for _ in range(REFUSALS)
    ]
    # Anyone at this address may still sign in: no refusal counted as a failed sign-in.
    _signed_in(base)
    # Each refusal flashed its error and sent the browser to the page: nothing else ran.
    for refused in refusals:
        assert refused.status_code in (302, 303), (refused.status_code, refused.text[:300])
        assert refused.headers["Location"] == "/console/sign-in"
    page = session.get(f"{base}/console/sign-in", timeout=10)
    assert "The value of Priority should between 1 and 16" in page.text


@pytest.mark.parametrize(
    "back", ["/console/sign-out", "/console/static/console.js", "/console/nosuch", "https://x/"]
)
def test_a_back_that_is_no_page_is_redirected_to(gateway: RunningGateway, back: str) -> None:
    gateway.account().get_queue("jobs").create(QueueMeta())
    session, token = _signed_in(gateway.url)
    refused = session.post(
        f"{gateway.url}/console/queues/jobs/send",
        data={"csrf_token": token, "body": "x", "priority": "99", "back": back},
        allow_redirects=False,
        timeout=10,
    )
    if back.startswith("/console/"):
        assert refused.status_code in (302, 303), refused.status_code
        assert refused.headers["Location"] == back
    else:  # not the console's: the overview, a page, is shown with the error
        assert refused.status_code == 400
        assert "The value of Priority should between 1 and 16" in refused.text
    # Still signed in: the sign-out route's POST did not run.
    overview = session.get(f"{gateway.url}/console/", allow_redirects=False, timeout=10)
    assert overview.status_code == 200
