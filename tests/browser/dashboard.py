"""The dashboard as a user drives it: log in, pick a camera, look at pictures, press buttons.

Every wait is a ``WebDriverWait`` on an explicit condition; nothing sleeps for a fixed time.
Selectors are the dashboard's DOM contract (ids and data attributes), never its text or layout.
Selenium is imported where it is used, so that without it the suite skips (or fails on CI) with
the reason from ``tests.browser.chrome.require_chromium`` instead of an import error.
"""
from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Callable, List, Optional, Tuple

from tests.browser.chrome import ConsoleLog, describe

DEFAULT_TIMEOUT_S = 15.0
# Before the token is given, the page's first API call is answered 401: the challenge that
# shows the login form. Chromium logs every 4xx answer as a SEVERE "network" entry.
CHALLENGE = re.compile(r"/api/v1/\S* - Failed to load resource: the server responded with a status of 401")

# A 32x18 grey copy of a picture, summed into a few numbers: equal for the same frame, different
# as soon as something in the picture moves. The picture comes from the page's own origin (a blob
# or an API URL), so the canvas is not tainted and can be read.
FINGERPRINT_JS = """
const img = arguments[0];
if (!img || !img.complete || !img.naturalWidth) return null;
const canvas = document.createElement("canvas");
canvas.width = 32; canvas.height = 18;
const ctx = canvas.getContext("2d");
ctx.drawImage(img, 0, 0, 32, 18);
const px = ctx.getImageData(0, 0, 32, 18).data;
const cols = new Array(32).fill(0);
for (let i = 0; i < px.length; i += 4) cols[(i / 4) % 32] += px[i] + px[i + 1] + px[i + 2];
return cols.map((v) => Math.round(v / 54)).join(",");
"""


# The points of an SVG polygon or line as fractions of its drawing's width and height: the
# overlay's viewBox when it has one (picture pixels), else the size it is shown at.
SHAPE_POINTS_JS = """
const shape = arguments[0], svg = shape.ownerSVGElement;
const box = svg.viewBox && svg.viewBox.baseVal && svg.viewBox.baseVal.width ? svg.viewBox.baseVal
  : { width: svg.getBoundingClientRect().width, height: svg.getBoundingClientRect().height };
let points;
if (shape.tagName === "line") {
  points = [[shape.x1.baseVal.value, shape.y1.baseVal.value], [shape.x2.baseVal.value, shape.y2.baseVal.value]];
} else {
  points = Array.from(shape.points, (p) => [p.x, p.y]);
}
return points.map(([x, y]) => [x / box.width, y / box.height]);
"""


class Dashboard:
    def __init__(self, driver, base_url: str, console: ConsoleLog, screenshots_dir: Optional[Path] = None) -> None:
        self.driver = driver
        self.base_url = base_url
        self.console = console
        self.screenshots_dir = screenshots_dir

    # ---- waiting and finding --------------------------------------------------------------

    def wait(self, condition: Callable, what: str, timeout_s: float = DEFAULT_TIMEOUT_S, poll_s: float = 0.2):
        """``condition(driver)``'s first truthy value, or a failure saying what did not happen."""
        from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
        from selenium.webdriver.support.ui import WebDriverWait

        wait = WebDriverWait(self.driver, timeout_s, poll_frequency=poll_s,
                             ignored_exceptions=(StaleElementReferenceException,))
        try:
            return wait.until(condition)
        except TimeoutException:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}") from None

    def find(self, css: str):
        """The element ``css``, its section opened first (a person looks where it is)."""
        from selenium.webdriver.common.by import By

        self.reveal(css)
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str) -> List:
        from selenium.webdriver.common.by import By

        self.reveal(css)
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def section_of(self, css: str) -> Optional[str]:
        """The section (``data-section``) the first element matching ``css`` belongs to, if any."""
        return self.driver.execute_script(
            "const e = document.querySelector(arguments[0]); const s = e && e.closest('[data-section]');"
            "return s ? s.dataset.section : null;", css)

    def go(self, section: str) -> None:
        """Open a section with its link in the header, as a person does."""
        from selenium.webdriver.common.by import By

        self.driver.find_element(By.CSS_SELECTOR, f'#nav a[href="#{section}"]').click()
        self.wait(lambda _d: self.driver.execute_script("return document.body.dataset.section") == section,
                  f"the {section} section to open")

    def play_review_item(self, item_id: str) -> str:
        """Open Review with every item listed, press Play on item ``item_id``; its CSS selector."""
        self.go("review")
        self.select("#review-reviewed", "")
        css = f'#review-list .review-item[data-id="{item_id}"]'
        self.shown(css, 30).find_element("css selector", 'button[aria-label="play the clip of this item"]').click()
        return css

    def reveal(self, css: str) -> None:
        """Open the section of the element ``css`` when another one is shown."""
        section = self.section_of(css)
        shown = self.driver.execute_script("return document.body.dataset.section")
        # No section yet: the page is still starting (its links may not take a click); the caller's wait asks again.
        if section and shown and shown != section:
            self.go(section)

    def shown(self, css: str, timeout_s: float = DEFAULT_TIMEOUT_S):
        """The first element matching ``css`` once it is displayed (its section opened first)."""
        def displayed(_driver):
            self.reveal(css)
            found = [e for e in self.find_all(css) if e.is_displayed()]
            return found[0] if found else None
        return self.wait(displayed, f"{css} to be shown", timeout_s)

    def click(self, css: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        """Click the element ``css`` once it is shown, as a person does. A list that re-renders
        (after a save, a configuration reload) may replace the element between finding and
        clicking it: then it is found again, and the click has not happened yet."""
        def clicked(_driver):
            self.shown(css, timeout_s).click()
            return True
        self.wait(clicked, f"{css} to take a click", timeout_s)

    def natural_size(self, img) -> Tuple[int, int]:
        """(naturalWidth, naturalHeight): (0, 0) until a picture has loaded and decoded."""
        size = self.driver.execute_script(
            "const i = arguments[0]; return i.complete ? [i.naturalWidth, i.naturalHeight] : [0, 0];", img)
        return int(size[0]), int(size[1])

    def loaded_picture(self, css: str, timeout_s: float = DEFAULT_TIMEOUT_S):
        """The ``img`` matching ``css`` once it shows a decoded picture."""
        def decoded(_driver):
            self.reveal(css)
            return next((i for i in self.find_all(css) if self.natural_size(i)[0] > 0), None)
        return self.wait(decoded,
                         f"{css} to show a picture", timeout_s)

    def fingerprint(self, img) -> Optional[str]:
        return self.driver.execute_script(FINGERPRINT_JS, img)

    def present(self, css: str, timeout_s: float = DEFAULT_TIMEOUT_S):
        """The first element matching ``css`` once it is in the page (an SVG line across the
        picture has no width, so "displayed" means nothing for it)."""
        return self.wait(lambda _d: next(iter(self.find_all(css)), None), f"{css} in the page", timeout_s)

    def shape_points(self, shape) -> List[Tuple[float, float]]:
        """An SVG polygon's or line's points, normalised like the configuration's."""
        return [tuple(p) for p in self.driver.execute_script(SHAPE_POINTS_JS, shape)]

    def people_in_picture(self, img) -> bool:
        """Whether the walking clip's picture shows its people: its empty canvas is one flat grey,
        so only then do the columns of the fingerprint differ."""
        columns = [int(v) for v in (self.fingerprint(img) or "0").split(",")]
        return max(columns) - min(columns) > 10

    def text(self, css: str) -> str:
        found = self.find_all(css)
        return found[0].text if found else ""

    # ---- logging in -----------------------------------------------------------------------

    def open(self, token: str) -> "Dashboard":
        """Load the page with no token stored, and unlock it through the login form."""
        self.driver.get(self.base_url + "/")
        self.driver.execute_script("sessionStorage.clear();")
        self.driver.get(self.base_url + "/")
        self.shown("#login-form")
        # The only errors allowed before the token is given are the 401 challenges themselves.
        before = [e for e in self.console.read() if e.level == "SEVERE" and not CHALLENGE.search(e.message)]
        assert not before, f"the login page logged errors:\n{describe(before)}"
        from selenium.webdriver.common.keys import Keys

        field = self.find("#token-input")
        field.clear()
        field.send_keys(token, Keys.ENTER)  # as a user submits the form
        self.shown("#main")
        self.wait(lambda _d: not self.find("#login").is_displayed(), "the login form to go away")
        return self

    # ---- views ----------------------------------------------------------------------------

    def camera_row(self, camera_id: str, timeout_s: float = DEFAULT_TIMEOUT_S):
        return self.shown(f'#cameras tr[data-camera="{camera_id}"]', timeout_s)

    def view_live(self, camera_id: str, timeout_s: float = 30.0):
        """Pick ``camera_id`` for the live view; the ``img#live`` once it shows a picture."""
        self.camera_row(camera_id).find_element("css selector", "button.view").click()
        return self.loaded_picture("img#live", timeout_s)

    def select(self, css: str, value: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        """Choose ``value`` in the ``select`` matching ``css`` once the page has offered it."""
        from selenium.webdriver.support.ui import Select

        def offered(_driver):
            element = self.shown(css, timeout_s)
            return element if value in [o.get_attribute("value") for o in Select(element).options] else None
        Select(self.wait(offered, f"{css} to offer {value!r}", timeout_s)).select_by_value(value)

    def type_into(self, css: str, text: str) -> None:
        """Replace the value of an input, as a user selecting all and typing would."""
        from selenium.webdriver.common.keys import Keys

        field = self.shown(css)
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys(Keys.DELETE)
        field.send_keys(text)

    def set_checked(self, css: str, checked: bool) -> None:
        box = self.shown(css)
        if box.is_selected() != checked:
            box.click()

    def answer_confirm(self, accept: bool) -> str:
        """Answer the ``window.confirm`` the last click opened; returns its question."""
        alert = self.wait(lambda d: _open_alert(d), "a confirmation dialog", 5)
        question = alert.text
        if accept:
            alert.accept()
        else:
            alert.dismiss()
        return question

    # ---- pictures of the views --------------------------------------------------------------

    def screenshot(self, name: str, css: Optional[str] = None, down_to: Optional[str] = None) -> Optional[Path]:
        """With a screenshots folder set: a PNG of the element ``css``, or of the page from its
        top down to the bottom of the element ``down_to`` (taller than the window if need be)."""
        if self.screenshots_dir is None:
            return None
        self.screenshots_dir.mkdir(parents=True, exist_ok=True)
        path = self.screenshots_dir / name
        if css is not None:
            element = self.shown(css)
            self.driver.execute_script("arguments[0].scrollIntoView({block: 'start'});", element)
            path.write_bytes(element.screenshot_as_png)
            return path
        self.driver.execute_script("window.scrollTo(0, 0);")
        width, height = self.driver.execute_script(
            "const r = arguments[0] ? arguments[0].getBoundingClientRect() : null;"
            "return [document.documentElement.clientWidth, r ? Math.ceil(r.bottom) + 16 : window.innerHeight];",
            self.shown(down_to) if down_to else None)
        shot = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}})
        path.write_bytes(base64.b64decode(shot["data"]))
        return path


def _open_alert(driver):
    from selenium.common.exceptions import NoAlertPresentException

    try:
        alert = driver.switch_to.alert
        alert.text  # noqa: B018 - raises when there is none
        return alert
    except NoAlertPresentException:
        return None
