"""Runs an example by name: ``python -m pinn_examples NAME [options]``."""

import argparse
import importlib
import sys

EXAMPLES = {
    "allen_cahn": ("pinn_examples.allen_cahn", "Allen-Cahn, periodic, against a pseudo-spectral ETDRK4 solution"),
    "burgers": ("pinn_examples.burgers", "viscous Burgers, shock at x = 0, against the Cole-Hopf solution"),
    "burgers_inverse": ("pinn_examples.burgers_inverse", "recover Burgers' viscosity from 2000 noisy samples"),
    "circle": (
        "pinn_examples.circle",
        "training loop with clipping, accumulation and non-finite skipping on a circle dataset",
    ),
    "deeponet": (
        "pinn_examples.deeponet",
        "physics-informed DeepONet: solution operator of a diffusion-reaction equation, no solution data",
    ),
    "heat": ("pinn_examples.heat", "heat equation against the exact solution"),
    "heat_inverse": (
        "pinn_examples.heat_inverse",
        "PINNacle HInv: recover u and the coefficient a of u_t = div(a grad u) + f from 2,500 noisy samples",
    ),
    "heat_nd": ("pinn_examples.heat_nd", "PINNacle HNd: heat equation in the 5-D unit ball against the exact solution"),
    "helmholtz": ("pinn_examples.helmholtz", "Helmholtz with adaptive loss weights against the exact solution"),
    "highdim": (
        "pinn_examples.highdim",
        "Poisson / Allen-Cahn / Sine-Gordon in the unit ball of R^D (D = 1000 and up), stochastic Taylor Laplacian",
    ),
    "laplace_holes": (
        "pinn_examples.laplace_holes",
        "Laplace on a square with four holes (CSG, hard conditions by distance functions) against finite differences",
    ),
    "kdv": ("pinn_examples.kdv", "Korteweg-de Vries solitons, periodic, against a pseudo-spectral ETDRK4 solution"),
    "kovasznay": (
        "pinn_examples.kovasznay",
        "Kovasznay flow (steady Navier-Stokes, fields u, v, p) with hard boundary values against the exact solution",
    ),
    "laplacian_check": (
        "pinn_examples.laplacian_check",
        "Laplacian of a Keras MLP by three methods, checked against scipy",
    ),
    "lid_driven_cavity": (
        "pinn_examples.lid_driven_cavity",
        "steady Navier-Stokes in a lid-driven cavity against a finite-volume Newton solution",
    ),
    "maml_pinn": (
        "pinn_examples.maml_pinn",
        "meta-learned PINN initialisation for a Poisson family: adaptation steps vs random init",
    ),
    "maml_sinusoid": ("pinn_examples.maml_sinusoid", "MAML, FOMAML and Meta-SGD on Finn et al.'s sinusoid benchmark"),
    "poisson": ("pinn_examples.poisson", "Poisson with a hard boundary condition against the exact solution"),
    "poisson_nd": ("pinn_examples.poisson_nd", "PINNacle PNd: Poisson in the 5-D unit cube against the exact solution"),
    "poisson_inverse": (
        "pinn_examples.poisson_inverse",
        "PINNacle PInv: recover u and the coefficient a of div(a grad u) + f = 0 from 2,500 noisy samples",
    ),
    "poisson_lshape": (
        "pinn_examples.poisson_lshape",
        "Poisson on an L-shaped polygon (hard condition by its distance function) against finite differences",
    ),
    "wave": ("pinn_examples.wave", "wave equation, u_t(x, 0) = 0 and all conditions hard, against the exact solution"),
}


def main(argv=None) -> int:
    """Runs ``python -m pinn_examples NAME [flags]``; without NAME, lists the examples."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in EXAMPLES:
        # Everything after the name, --help included, belongs to the example's own parser.
        return importlib.import_module(EXAMPLES[argv[0]][0]).main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="python -m pinn_examples", description="hodiff examples; NAME --help shows an example's own flags"
    )
    parser.add_argument("name", nargs="?", choices=sorted(EXAMPLES), help="example to run")
    parser.parse_args(argv)  # no known name here: --help, an unknown name or a stray flag end in parse_args
    print("Examples (python -m pinn_examples NAME --help for an example's flags):")
    for name, (_, summary) in sorted(EXAMPLES.items()):
        print(f"  {name:20s} {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
