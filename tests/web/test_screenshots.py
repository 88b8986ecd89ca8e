"""A screenshot of every page at 1440x900 and at 1920x1080, in light and in dark mode, kept in
tests/web/artifacts/pages/ (issue 17: "so changes can be seen"), taken by chromium on a live
daphne with a topic holding records and a consumer group with lag; and every page fits a
1440 px and a 1920 px screen (no horizontal scrolling).

The theme is chosen as a user does it (the header's toggle, remembered by the browser), so
the dark screenshots are what the toggle gives; each page's background is checked to be
dark or light as asked.
"""

from __future__ import annotations

import re
import uuid

from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from .conftest import ARTIFACTS
from .test_browser import browser_page, log_in  # noqa: F401 - browser_page is a fixture
from .test_groups_api import commit

SHOTS = ARTIFACTS / "pages"


def pages(topic: str, group: str) -> dict[str, str]:
    c = "/clusters/local"
    return {
        "overview": f"{c}/",
        "clusters": "/clusters/",
        "cluster-settings": f"{c}/settings/",
        "broker": f"{c}/brokers/1/",
        "broker-configs": f"{c}/brokers/1/configs/",
        "topics": f"{c}/topics/",
        "topic": f"{c}/topics/{topic}/",
        "topic-configs": f"{c}/topics/{topic}/configs/",
        "messages": f"{c}/topics/{topic}/messages/",
        "segments": f"{c}/topics/{topic}/partitions/0/segments/",
        "groups": f"{c}/groups/",
        "group": f"{c}/groups/{group}/",
        "transactions": f"{c}/transactions/",
        "maintenance": f"{c}/maintenance/",
        "spark-loads": f"{c}/spark-loads/",
        "security": f"{c}/security/",
        "api-token": "/account/token/",
    }


def _brightness(css_color: str) -> int:
    return sum(map(int, re.findall(r"\d+", css_color)[:3]))


SIZES = [(1440, 900), (1920, 1080)]


def test_every_page_in_light_and_dark_at_1440_and_1920(browser_page, live_dashboard):  # noqa: F811
    page = browser_page
    SHOTS.mkdir(parents=True, exist_ok=True)
    bootstrap = live_dashboard.broker.bootstrap
    topic = f"shots-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic(topic, 1, 1)])
    admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(30):
        producer.send(topic, b'{"order": %d, "customer": "cust-%d"}' % (i, i % 4), key=b"k%d" % i)
    producer.flush()
    producer.close()
    group = f"shots-group-{uuid.uuid4().hex[:6]}"
    commit(live_dashboard.broker, group, {(topic, 0): 12})
    log_in(page, live_dashboard)

    too_wide = {}
    for width_px, height_px in SIZES:
        page.set_viewport_size({"width": width_px, "height": height_px})
        size = f"{width_px}x{height_px}"
        for theme in ("light", "dark"):
            page.evaluate(f"() => localStorage.setItem('theme', '{theme}')")
            for name, path in pages(topic, group).items():
                response = page.goto(f"{live_dashboard.url}{path}")
                assert response is not None and response.status == 200, (name, response)
                page.wait_for_load_state("load")
                assert page.evaluate("() => document.documentElement.dataset.theme") == theme
                background = _brightness(
                    page.evaluate("() => getComputedStyle(document.body).backgroundColor")
                )
                assert (background < 150) == (theme == "dark"), (name, theme, background)
                width = page.evaluate("() => document.documentElement.scrollWidth")
                if width > width_px:
                    too_wide[f"{name}@{size}"] = width
                page.screenshot(path=str(SHOTS / f"{name}-{theme}-{size}.png"))
    page.evaluate("() => localStorage.removeItem('theme')")
    assert not too_wide, f"pages wider than the screen: {too_wide}"
    for width_px, height_px in SIZES:
        shots = list(SHOTS.glob(f"*-{width_px}x{height_px}.png"))
        assert len(shots) >= 2 * len(pages(topic, group))
