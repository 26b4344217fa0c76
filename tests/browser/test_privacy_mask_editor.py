"""Privacy masks in the dashboard's zone editor, in a real browser against a running appliance.

A privacy mask is drawn with the mouse like a zone (kind "privacy mask", its own colour), saved
through the camera's PATCH (the one change path) and checked in the configuration over HTTP;
then edited in place (its style changed) and deleted. The appliance and browser are those of
conftest.py (a module of their own).
"""
from __future__ import annotations

import pytest

from tests.browser.conftest import EDIT_CAMERA
from tests.browser.test_dashboard import POINT_TOLERANCE, assert_drawn_at, camera_config

pytestmark = pytest.mark.slow

POINTS = [(0.55, 0.15), (0.90, 0.15), (0.90, 0.45), (0.55, 0.45)]


def draw(dashboard, camera_id, kind, points):
    from selenium.webdriver.common.action_chains import ActionChains

    dashboard.select("select#editor-camera", camera_id)
    dashboard.loaded_picture("img#editor-snapshot", 30)
    dashboard.select("select#editor-kind", kind)
    canvas = dashboard.shown("svg#editor-canvas")
    dashboard.driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", canvas)
    width, height = canvas.size["width"], canvas.size["height"]
    actions = ActionChains(dashboard.driver)
    for x, y in points:
        actions.move_to_element_with_offset(canvas, round((x - 0.5) * width), round((y - 0.5) * height)).click()
    actions.perform()


def privacy_masks(appliance):
    return (camera_config(appliance, EDIT_CAMERA).get("privacy") or {}).get("masks", [])


def test_a_privacy_mask_drawn_like_a_zone_lands_in_the_config_and_is_edited_and_deleted(dashboard, appliance):
    before = privacy_masks(appliance)
    draw(dashboard, EDIT_CAMERA, "privacy", POINTS)
    dashboard.shown("#editor-style-label")  # a privacy mask has a style: black or blur
    dashboard.select("select#editor-style", "blur")
    dashboard.find("button#editor-finish").click()
    assert not dashboard.text("#editor-errors").strip(), dashboard.text("#editor-errors")
    dashboard.screenshot("privacy-mask-editor.png", "#area-editor")
    dashboard.find("button#editor-save").click()
    name = f"privacy mask {len(before) + 1}"
    dashboard.shown(f'#editor-areas li[data-area="{name}"][data-kind="privacy"]')

    masks = dashboard.wait(lambda _d: (lambda m: m if len(m) == len(before) + 1 else None)(privacy_masks(appliance)),
                           "the privacy mask in the configuration")
    assert not dashboard.text("#editor-errors").strip(), dashboard.text("#editor-errors")
    assert masks[:-1] == before and masks[-1]["style"] == "blur"
    for got, want in zip(masks[-1]["polygon"], POINTS):
        assert got == pytest.approx(list(want), abs=POINT_TOLERANCE), f"drawn {POINTS}, saved {masks[-1]}"
    # drawn in its own colour, apart from zones and motion masks
    assert_drawn_at(dashboard, f'svg#editor-canvas .privacy-mask polygon[data-privacy="{name}"]', POINTS)
    colour = dashboard.driver.execute_script(
        "return getComputedStyle(document.querySelector(arguments[0])).stroke;",
        f'svg#editor-canvas polygon[data-privacy="{name}"]')
    assert colour == "rgb(255, 0, 255)", colour

    # edited in its place: the style changes, the polygon and the other masks stay
    dashboard.click(f'#editor-areas li[data-area="{name}"] button.edit')
    dashboard.select("select#editor-style", "black")
    dashboard.find("button#editor-save").click()
    edited = dashboard.wait(lambda _d: (lambda m: m if m and m[-1]["style"] == "black" else None)(
        privacy_masks(appliance)), "the edited privacy mask")
    assert len(edited) == len(masks) and edited[-1]["polygon"] == masks[-1]["polygon"]

    dashboard.click(f'#editor-areas li[data-area="{name}"] button.delete')
    dashboard.wait(lambda _d: privacy_masks(appliance) == before, "the privacy mask deleted")
