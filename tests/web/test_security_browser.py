"""The security page in a real browser (Debian's chromium) on a live daphne: an operator
saves a SCRAM user's credential from the form and sees it listed; the ACL section of a
cluster without an authorizer says so in Kafka's words. A screenshot is kept."""

from __future__ import annotations

from playwright.sync_api import expect

from .conftest import ARTIFACTS
from .test_browser import browser_page, log_in, submit_and_reload  # noqa: F401 - fixture


def test_an_operator_saves_a_scram_user_from_the_form(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    log_in(page, live_dashboard)
    page.goto(f"{live_dashboard.url}/clusters/{live_dashboard.cluster}/security/")
    expect(page.locator("#acl-error")).to_contain_text("SECURITY_DISABLED")
    # The header still knows who is logged in (the page's form once shadowed `user`).
    expect(page.locator("header nav")).to_contain_text("Security")
    expect(page.locator("form.logout")).to_contain_text("Log out")
    page.fill("#user-form input[name=user_name]", "gwen")
    page.select_option("#user-form select[name=mechanism]", "SCRAM-SHA-256")
    page.fill("#user-form input[name=password]", "gwen-pw")
    submit_and_reload(page, page.locator("#set-user"))
    expect(page.locator(".messages")).to_contain_text("SCRAM-SHA-256 credential of gwen saved.")
    expect(page.locator('#users tr[data-user="gwen"]')).to_contain_text("SCRAM-SHA-256 × 8192")
    assert "gwen-pw" not in page.content()
    page.screenshot(path=str(ARTIFACTS / "security.png"))
