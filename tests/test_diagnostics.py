"""The trainer's stall diagnostic: it fires on the users' soft-condition plate and on clashing conditions,
names the conflicting terms, and stays quiet on a healthy run."""

import logging

import numpy as np
import pytest

from hodiff import pinn
from hodiff.pinn.diagnostics import StallDiagnostic, gradient_check
from pinn_examples import insulated_plate


def soft_plate():
    """The users' configuration of the insulated plate: every condition a loss term, float32 (a short
    L-BFGS run in place of their 2,000 Adam + 1,500 L-BFGS steps; it stalls the same way). The pieces are picked by
    predicates, which select exactly the plate's left and right edges."""
    domain, _, _ = insulated_plate.domain_and_parts()
    left = lambda x: np.isclose(x["x"], 0.0)  # noqa: E731
    right = lambda x: np.isclose(x["x"], 2.0)  # noqa: E731
    problem = pinn.Problem(
        domain,
        needs=("u_xx", "u_yy"),
        residual=lambda d, x, p: d["u_xx"] + d["u_yy"],
        conditions=[
            pinn.Dirichlet(1.0, count=64, name="hot", where=left),
            pinn.Dirichlet(0.0, count=64, name="cold", where=right),
            pinn.Neumann(0.0, count=128, name="insulated", where=lambda x: ~(left(x) | right(x))),
        ],
    )
    return problem, pinn.mlp(domain, width=16, depth=2, dtype="float32")


def test_diagnostic_fires_on_the_users_soft_plate_and_names_the_conflicting_terms(caplog):
    problem, model = soft_plate()
    schedule = pinn.Schedule(steps_per_call=50, log_every=50, progress=False, diagnose_every=100)
    trainer = pinn.Trainer(pinn.TrainingData(problem, interior=256), model, schedule=schedule)
    with caplog.at_level(logging.WARNING, logger="hodiff.pinn.diagnostics"):
        trainer.lbfgs(150)
    findings = trainer.run_info["diagnostics"]
    assert findings and findings[-1]["phase"] == "lbfgs" and findings[-1]["kind"] == "conflict"
    assert findings[-1]["cancellation"] >= 10 and findings[-1]["loss"] > 0.01 * findings[-1]["first_loss"]
    assert {"hot", "insulated"} <= set(findings[-1]["terms"]) or {"cold", "insulated"} <= set(findings[-1]["terms"])
    assert "cancel" in caplog.text and "conflicting terms" in caplog.text and "output_transform" in caplog.text
    rows = [row for row in trainer.history if "gradient_cancellation" in row]
    assert [row["step"] for row in rows] == [100]
    assert all(row["gradient_norm_total"] > 0 and row["gradient_norm_insulated"] > 0 for row in rows)


def test_gradient_check_is_exact_for_two_clashing_conditions():
    domain = pinn.Interval("x", 0.0, 1.0)
    clash = pinn.Problem(  # u(0) = 0 and u(0) = 1: the gradients of the two terms are opposite at the optimum
        domain,
        needs=("u_xx",),
        residual=lambda d, x, p: 0.0 * d["u_xx"],
        conditions=[
            pinn.Dirichlet(0.0, count=4, name="low", where=lambda x: x["x"] < 0.5),
            pinn.Dirichlet(1.0, count=4, name="high", where=lambda x: x["x"] < 0.5),
        ],
    )
    trainer = pinn.Trainer(
        pinn.TrainingData(clash, interior=8),
        pinn.mlp(domain, width=4, depth=1),
        schedule=pinn.Schedule(progress=False, diagnose_every=0),
    )
    assert not any(isinstance(c, StallDiagnostic) for c in trainer.callbacks), "diagnose_every=0 turns it off"
    check = gradient_check(trainer)
    u0 = float(trainer.predict(np.zeros((1, 1)))[0, 0])
    # loss = u0^2 + (u0 - 1)^2: the terms' gradients are 2 u0 g and 2 (u0 - 1) g for g = grad u0
    ratio = abs(u0) / abs(u0 - 1.0)
    assert check["norms"]["low"] / check["norms"]["high"] == pytest.approx(ratio, rel=1e-6)
    assert check["total"] == pytest.approx(abs(2 * u0 - 1) / abs(u0 - 1) * check["norms"]["high"], rel=1e-6)
    trainer.lbfgs(30)  # to the compromise u0 = 1/2, where the two gradients cancel
    check = gradient_check(trainer)
    assert float(trainer.predict(np.zeros((1, 1)))[0, 0]) == pytest.approx(0.5, abs=1e-3)
    assert check["conflicts"] == [("low", "high", pytest.approx(-1.0))] and check["cancellation"] > 100


def test_diagnostic_stays_quiet_on_a_healthy_run_and_checks_its_options():
    domain = pinn.Interval("x", 0.0, 1.0)
    problem = pinn.Problem(
        domain,
        needs=("u_xx",),
        residual=lambda d, x, p: d["u_xx"] + 1.0,
        conditions=[pinn.Dirichlet(0.0, count=8)],
    )
    schedule = pinn.Schedule(steps_per_call=50, log_every=50, progress=False)
    trainer = pinn.Trainer(
        pinn.TrainingData(problem, interior=32), pinn.mlp(domain, width=8, depth=2), schedule=schedule
    )
    trainer.lbfgs(150)
    assert trainer.final_loss < 1e-5
    assert "diagnostics" not in trainer.run_info
    with pytest.raises(ValueError, match="cancellation must be a finite number >= 1"):
        StallDiagnostic(cancellation=0.5)
    with pytest.raises(ValueError, match="diagnose_every must be a finite int >= 0"):
        pinn.Schedule(diagnose_every=-1)


@pytest.mark.parametrize("flux", [0.0, -0.25])
def test_a_stalled_pure_neumann_problem_whose_fluxes_do_not_balance_is_named(flux, caplog):
    """-laplacian(u) = 1 with du/dn = 0 on the whole boundary has no solution: the heat has nowhere to go. The stall
    warning says the conditions cannot all hold, with the integrals (issue 46 item 5); balanced (du/dn = -1/4 on each
    side), it does not. plateau=1 makes every phase far above zero a plateau, so the warning is given either way."""
    square = pinn.Rectangle(("x", "y"), (0.0, 0.0), (1.0, 1.0))
    problem = pinn.Problem(
        square,
        needs=("u_xx", "u_yy"),
        residual=lambda d, x, p: d["u_xx"] + d["u_yy"] + 1.0,
        conditions=[pinn.Neumann(flux, count=16, name="walls")],
    )
    schedule = pinn.Schedule(steps_per_call=10, log_every=10, progress=False, jit_compile=False)
    trainer = pinn.Trainer(
        pinn.TrainingData(problem, interior=32),
        pinn.mlp(square, width=8, depth=1, seed=0),
        schedule=schedule,
        callbacks=[StallDiagnostic(every=0, plateau=1.0)],
    )
    with caplog.at_level(logging.WARNING, logger="hodiff.pinn.diagnostics"):
        trainer.adam(20)
    (finding,) = trainer.run_info["diagnostics"]
    assert "training may have stalled" in caplog.text
    balance = finding["neumann_balance"]
    assert balance["conditions"] == ["walls"] and balance["sources"] == pytest.approx(1.0)
    if flux == 0.0:
        assert not balance["balanced"] and balance["mismatch"] == pytest.approx(1.0)
        assert "cannot all hold" in finding["message"] and "(Neumann 'walls')" in finding["message"]
        assert "= 0 + 1 = 1, not 0" in finding["message"] and "cannot all hold" in caplog.text
    else:
        assert balance["balanced"] and "cannot all hold" not in caplog.text
