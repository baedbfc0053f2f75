"""plot_training_log's zoomed loss panel (chapter 9, the shipped run): the same curves as
the loss panel, its y axis fitted to the steps from ``zoom_from`` on."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from transformer_lib.views.training_curves import plot_training_log  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


ROWS = [
    {"step": s, "loss": 6 / s**0.5, "lr": 1e-3} | ({"val_loss": 1.0 + 5 / s} if s % 10 == 0 else {})
    for s in range(1, 201)
]


def test_zoomed_panel_spans_only_the_late_losses():
    fig = plot_training_log(ROWS, smooth=0.5, zoom_from=100)
    top, zoom, lr = fig.axes
    assert [a.get_ylabel() for a in (top, lr)] == ["loss (nats per token)", "learning rate"]
    assert "zoomed" in zoom.get_ylabel() and "100" in zoom.get_ylabel()
    assert lr.get_xlabel() == "training step"
    late = [r[k] for r in ROWS if r["step"] >= 100 for k in ("loss", "val_loss") if k in r]
    low, high = zoom.get_ylim()
    assert low < min(late) and high > max(late)  # every late loss inside
    assert high - low < 0.2 * (max(r["loss"] for r in ROWS) - min(late))  # a real zoom
    labels = lambda ax: sorted(ln.get_label() for ln in ax.lines)  # noqa: E731
    assert labels(zoom) == labels(top)  # the same curves
    np.testing.assert_array_equal(zoom.lines[1].get_ydata(), top.lines[1].get_ydata())


def test_without_zoom_the_panels_are_unchanged():
    assert len(plot_training_log(ROWS).axes) == 2
    with pytest.raises(ValueError, match="from step 500"):
        plot_training_log(ROWS, zoom_from=500)
