"""Failed sign-ins slow down: after five failures for one user from one address the login
page, the Django admin's login and authenticate() itself refuse for a delay that doubles with
each further failure; the right password works again once the delay has passed."""

import time

import pytest
from django.contrib.auth import authenticate
from django.contrib.auth.models import User
from django.test import Client, RequestFactory

pytestmark = pytest.mark.django_db
PASSWORD = "right-pw-123"


@pytest.fixture(autouse=True)
def quick_throttle(settings):
    from django.core.cache import cache

    settings.LOGIN_THROTTLE_FREE_FAILURES = 5
    settings.LOGIN_THROTTLE_BASE_DELAY_S = 1.0
    settings.LOGIN_THROTTLE_MAX_DELAY_S = 60.0
    cache.clear()
    User.objects.create_user(username="alice", password=PASSWORD)
    yield
    cache.clear()


def login(client: Client, password: str):
    return client.post("/login/", {"username": "alice", "password": password})


def signed_in(response) -> bool:
    return response.status_code == 302


def test_five_failures_then_even_the_right_password_waits():
    client = Client()
    for _ in range(5):
        response = login(client, "wrong")
        assert response.status_code == 200
        assert b"Wrong username or password." in response.content
    refused = login(client, PASSWORD)
    assert not signed_in(refused)
    assert b"Too many failed sign-ins" in refused.content
    time.sleep(1.1)  # the first delay is LOGIN_THROTTLE_BASE_DELAY_S
    assert signed_in(login(client, PASSWORD))


def test_the_delay_doubles_with_each_failure():
    from dashboard.core.login_throttle import wait_seconds

    client = Client()
    for _ in range(6):
        login(client, "wrong")
    first = wait_seconds("alice", "127.0.0.1")
    assert 0 < first <= 1.0
    time.sleep(first + 0.05)
    login(client, "wrong")  # the seventh failure, made after the delay
    second = wait_seconds("alice", "127.0.0.1")
    assert 1.0 < second <= 4.0


def test_attempts_during_a_delay_are_not_checked_nor_counted():
    from dashboard.core.login_throttle import wait_seconds

    client = Client()
    for _ in range(5):
        login(client, "wrong")
    before = wait_seconds("alice", "127.0.0.1")
    for _ in range(5):
        login(client, "wrong")  # refused unchecked: the delay does not grow
    assert wait_seconds("alice", "127.0.0.1") <= before


def test_the_admin_login_and_authenticate_are_throttled_too():
    request = RequestFactory().post("/admin/login/")
    for _ in range(5):
        assert authenticate(request, username="alice", password="wrong") is None
    assert authenticate(request, username="alice", password=PASSWORD) is None
    admin = Client().post("/admin/login/", {"username": "alice", "password": PASSWORD})
    assert admin.status_code == 200  # the form again, not a redirect


def test_another_address_and_another_user_are_not_held_up():
    for _ in range(5):
        login(Client(), "wrong")
    elsewhere = Client(REMOTE_ADDR="10.9.9.9")
    assert signed_in(elsewhere.post("/login/", {"username": "alice", "password": PASSWORD}))
    User.objects.create_user(username="bob", password=PASSWORD)
    assert signed_in(Client().post("/login/", {"username": "bob", "password": PASSWORD}))


def test_a_success_clears_the_count():
    client = Client()
    for _ in range(4):
        login(client, "wrong")
    assert signed_in(login(client, PASSWORD))
    for _ in range(4):
        login(Client(), "wrong")
    assert signed_in(login(Client(), PASSWORD))
