"""Draws docs/images/geometry_plate.png: the square minus four disks, its interior and boundary
points with outward normals, and the distance function. Run: python docs/geometry_picture.py"""

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import tensorflow as tf

from hodiff.pinn import Disk, Rectangle


def main() -> None:
    square = Rectangle(("x", "y"), (-0.5, -0.5), (0.5, 0.5), name="outer")
    plate = square
    for sx in (-1, 1):
        for sy in (-1, 1):
            plate = plate - Disk((0.3 * sx, 0.3 * sy), 0.1, name="circles")
    interior = plate.sample_interior(1024, seed=0)
    boundary, normals = plate.sample_boundary(160, seed=1)
    axes, grid = plate.grid({"x": 201, "y": 201})
    phi = plate.distance(tf.constant(grid)).numpy()
    phi[~plate.contains(grid)] = np.nan

    figure, (left, right) = plt.subplots(1, 2, figsize=(9, 4.2), constrained_layout=True)
    left.scatter(interior[:, 0], interior[:, 1], s=2, color="0.6", label="interior (sobol)")
    left.quiver(boundary[:, 0], boundary[:, 1], normals[:, 0], normals[:, 1], color="C3", scale=25, width=0.004)
    left.scatter(boundary[:, 0], boundary[:, 1], s=6, color="C0", label="boundary, outward normals")
    left.set_title("plate = square - 4 disks")
    left.legend(loc="upper center", fontsize=8, bbox_to_anchor=(0.5, -0.06), ncol=2)
    image = right.pcolormesh(axes["x"], axes["y"], phi.reshape(201, 201).T, shading="auto", cmap="viridis")
    right.contour(axes["x"], axes["y"], phi.reshape(201, 201).T, levels=8, colors="white", linewidths=0.5)
    right.set_title("plate.distance(x)")
    figure.colorbar(image, ax=right)
    for ax in (left, right):
        ax.set_aspect("equal")
    output = Path(__file__).parent / "images" / "geometry_plate.png"
    figure.savefig(output, dpi=90)
    print(output)


if __name__ == "__main__":
    main()
