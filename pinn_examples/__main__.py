"""Runs an example by name: ``python -m pinn_examples NAME [options]``."""

import argparse
import importlib
import sys

EXAMPLES = {
    "allen_cahn": ("pinn_examples.allen_cahn", "Allen-Cahn, periodic, against a pseudo-spectral ETDRK4 solution"),
    "burgers": ("pinn_examples.burgers", "viscous Burgers, shock at x = 0, against the Cole-Hopf solution"),
    "burgers_inverse": ("pinn_examples.burgers_inverse", "recover Burgers' viscosity from 2000 noisy samples"),
    "circle": ("pinn_examples.circle", "training loop with clipping, accumulation and non-finite skipping on a circle dataset"),
    "heat": ("pinn_examples.heat", "heat equation against the exact solution"),
    "helmholtz": ("pinn_examples.helmholtz", "Helmholtz with adaptive loss weights against the exact solution"),
    "laplacian_check": ("pinn_examples.laplacian_check", "Laplacian of a Keras MLP by three methods, checked against scipy"),
    "maml_pinn": ("pinn_examples.maml_pinn", "meta-learned PINN initialisation for a Poisson family: adaptation steps vs random init"),
    "maml_sinusoid": ("pinn_examples.maml_sinusoid", "MAML, FOMAML and Meta-SGD on Finn et al.'s sinusoid benchmark"),
    "poisson": ("pinn_examples.poisson", "Poisson with a hard boundary condition against the exact solution"),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pinn_examples", description="hodiff examples")
    parser.add_argument("name", nargs="?", choices=sorted(EXAMPLES), help="example to run")
    args, rest = parser.parse_known_args(argv)
    if args.name is None:
        print("Examples:")
        for name, (_, summary) in sorted(EXAMPLES.items()):
            print(f"  {name:20s} {summary}")
        return 0
    module = importlib.import_module(EXAMPLES[args.name][0])
    return module.main(rest)


if __name__ == "__main__":
    sys.exit(main())
