"""Prediction files other than a zarr store: CF netCDF4 and Cloud-Optimized GeoTIFF.

* :mod:`bigkern.store.formats.prediction_files` — the output's format from its
  suffix, and one writer for each;
* :mod:`bigkern.store.formats.prediction_blocks` — the prediction's blocks computed
  on the cluster a few at a time, for a writer in the client;
* :mod:`bigkern.store.formats.netcdf_output` and
  :mod:`bigkern.store.formats.geotiff_output` — the two file writers, staged,
  claimed and published whole like every output.
"""
