"""Chapter 9's exercise "write the training step": the check passes the library's own step
and names each typical mistake."""

import pytest
import torch

from transformer_lib.views.training_step_exercise import check_training_step


def make_step(shift=True, zero_grad=True, clip=True, opt_step=True, sched_steps=1, as_float=True):
    """The model solution of the chapter, with one thing optionally done wrong."""

    def training_step(model, src, tgt, criterion, optimizer, scheduler, clip_norm):
        if shift:
            loss = criterion(model(src, tgt[:, :-1]), tgt[:, 1:])
        else:
            loss = criterion(model(src, tgt), tgt)
        if zero_grad:
            optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        if opt_step:
            optimizer.step()
        for _ in range(sched_steps):
            scheduler.step()
        return loss.item() if as_float else loss

    return training_step


def test_the_library_step_passes(capsys):
    check_training_step(make_step())
    assert "Correct!" in capsys.readouterr().out


def test_zero_grad_without_set_to_none_passes_too(capsys):
    def training_step(model, src, tgt, criterion, optimizer, scheduler, clip_norm):
        optimizer.zero_grad()
        loss = criterion(model(src, tgt[:, :-1]), tgt[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
        optimizer.step()
        scheduler.step()
        return float(loss)

    check_training_step(training_step)
    assert "Correct!" in capsys.readouterr().out


def test_an_unattempted_stub_does_not_raise(capsys):
    def training_step(model, src, tgt, criterion, optimizer, scheduler, clip_norm):
        raise NotImplementedError

    check_training_step(training_step)
    out = capsys.readouterr().out
    assert "not attempted yet" in out and "Correct!" not in out


@pytest.mark.parametrize(
    "mistake, message",
    [
        ({"shift": False}, "The target is not shifted"),
        ({"zero_grad": False}, "gradients accumulate"),
        ({"clip": False}, "not clipped"),
        ({"sched_steps": 0}, "learning rate never changes"),
        ({"opt_step": False}, "parameters never change"),
        ({"as_float": False}, "returned a tensor"),
        ({"sched_steps": 2}, "exactly once per step"),
    ],
    ids=lambda v: next(iter(v)) if isinstance(v, dict) else None,
)
def test_each_mistake_gets_its_message(mistake, message):
    with pytest.raises(AssertionError, match=message):
        check_training_step(make_step(**mistake))


def test_a_wrong_loss_is_reported():
    def training_step(model, src, tgt, criterion, optimizer, scheduler, clip_norm):
        logits = model(src, tgt[:, :-1])  # (B, T-1, V)
        loss = torch.nn.functional.cross_entropy(logits.transpose(1, 2), tgt[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        return loss.item()

    with pytest.raises(AssertionError, match=r"first loss is .*tgt\[:, 1:\]"):
        check_training_step(training_step)


def test_returning_nothing_is_reported():
    def training_step(model, src, tgt, criterion, optimizer, scheduler, clip_norm):
        make_step()(model, src, tgt, criterion, optimizer, scheduler, clip_norm)

    with pytest.raises(AssertionError, match="Python float"):
        check_training_step(training_step)
