"""Lee & Huang's Figures 1–5 for a :func:`~bigkern.jobs.nystrom_spectrum` result."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import xarray as xr

from bigkern.extras import require

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_nystrom_spectrum"]


def plot_nystrom_spectrum(
    spectrum: xr.Dataset,
    path: str | os.PathLike[str] | None = None,
    *,
    title: str | None = None,
    storage_options: dict[str, Any] | None = None,
    dpi: int = 100,
) -> Figure | Path | str:
    """The four panels of Lee & Huang's Figures 1–5 for a :func:`nystrom_spectrum` result.

    (a) λ_k − λ̃_k against k; (b) λ_k and λ̃_k for k = 2…m̃ (the largest
    eigenvalue is skipped, its scale dwarfs the rest); (c) λ_k and λ̃_k for
    k = m̃+1…n, where K̃ (of rank ≤ m̃) has only round-off left and λ_k is what
    the approximation misses (empty when m̃ = n); (d) √λ_k · ‖e_k − ẽ_k‖₂
    against k.

    Parameters
    ----------
    spectrum : xarray.Dataset
        The output of :func:`nystrom_spectrum`.
    path : str, path-like or fsspec URL, optional
        Where to write the PNG (``memory://``, ``s3://`` … go through fsspec).
        Without it the figure is returned instead.
    title : str, optional
        Figure title (default: sizes, ω and the Table 2 numbers).
    storage_options : dict, optional
        fsspec options for a URL.
    dpi : int
        Resolution of the PNG.

    Returns
    -------
    matplotlib.figure.Figure, pathlib.Path or str
        The figure without ``path``; else ``path``, a Path for a local path and
        the URL as given for a URL.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from bigkern import nystrom_spectrum, plot_nystrom_spectrum
    >>> X = np.random.default_rng(0).normal(size=(100, 2))
    >>> spectrum = nystrom_spectrum(X, 10, omega=1.0, random_state=0)
    >>> fig = plot_nystrom_spectrum(spectrum)
    >>> [ax.get_title()[:3] for ax in fig.axes]
    ['(a)', '(b)', '(c)', '(d)']
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     png = plot_nystrom_spectrum(spectrum, pathlib.Path(tmp) / "spectrum.png")
    ...     print(png.name, png.stat().st_size > 0)
    spectrum.png True
    """
    require("matplotlib", extra="plot", purpose="plot_nystrom_spectrum")
    from matplotlib.figure import Figure

    k = spectrum["k"].values
    lam = spectrum["eigenvalue_full"].values
    lam_t = spectrum["eigenvalue_nystrom"].values
    n, m = int(spectrum.attrs["n_rows"]), int(spectrum.attrs["n_reduced"])
    if title is None:
        a = spectrum.attrs
        title = (f"Full kernel vs. Nyström approximation: n = {n}, m̃ = {m}, "
                 f"ω = {a['omega']:g}\nlargest λ {a['largest_eigenvalue_full']:.4g} vs "
                 f"{a['largest_eigenvalue_nystrom']:.4g}, max |λ − λ̃| "
                 f"{a['max_eigenvalue_difference']:.3g}, rel. trace diff "
                 f"{a['relative_trace_difference']:.3g}")
    fig = Figure(figsize=(11, 8.5))
    (ax_a, ax_b), (ax_c, ax_d) = fig.subplots(2, 2)
    ax_a.plot(k, spectrum["eigenvalue_difference"].values, ".-", ms=3, lw=0.8)
    ax_a.set(title="(a) λ_k − λ̃_k", xlabel="k", ylabel="eigenvalue difference")
    for ax, part, label in ((ax_b, slice(1, m), f"(b) eigenvalues, k = 2…{m}"),
                            (ax_c, slice(m, n), f"(c) eigenvalues, k = {m + 1}…{n}")):
        if part.start < part.stop:
            ax.plot(k[part], lam[part], "o-", ms=3, lw=0.8, label="full K")
            ax.plot(k[part], lam_t[part], "x--", ms=3, lw=0.8, label="Nyström K̃")
            ax.legend()
        else:
            ax.text(0.5, 0.5, "no eigenvalues in this range", ha="center", va="center",
                    transform=ax.transAxes)
        ax.set(title=label, xlabel="k", ylabel="eigenvalue")
    ax_d.plot(k, spectrum["eigenvector_discrepancy"].values, ".-", ms=3, lw=0.8)
    ax_d.set(title="(d) √λ_k · ‖e_k − ẽ_k‖₂", xlabel="k", ylabel="eigenvector discrepancy")
    for ax in (ax_a, ax_b, ax_c, ax_d):
        ax.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    if path is None:
        return fig
    text = os.fspath(path)
    if isinstance(text, str) and "://" in text:
        import fsspec

        with fsspec.open(text, "wb", **(storage_options or {})) as f:
            fig.savefig(f, format="png", dpi=dpi)
        return text
    local = Path(text)
    fig.savefig(local, format="png", dpi=dpi)
    return local
