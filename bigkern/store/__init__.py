"""Writing safely, and reading back what was written: bigkern's outputs by path or URL.

* :mod:`bigkern.store.urls` — one :class:`~bigkern.store.urls.Location` for a local
  path or an fsspec URL;
* :mod:`bigkern.store.claims` — every writer claims its output first, so a second
  writer of the same path fails at once;
* :mod:`bigkern.store.outputs` and :mod:`bigkern.store.staging` — what may be
  replaced (only what bigkern wrote, only by its own kind), staged beside the
  output and published whole;
* :mod:`bigkern.store.regions` and :mod:`bigkern.store.region_records` — predictions
  written region by region with a record per region, so a killed run resumes;
* :mod:`bigkern.store.manifest` and :mod:`bigkern.store.integrity` — chunk
  checksums, and reads that name the store, variable and chunk that is bad;
* :mod:`bigkern.store.limits` — declared sizes checked before a store is read;
* :mod:`bigkern.store.zarr_store` — the store's root attributes and its finishing;
* :mod:`bigkern.store.figure_files` — PNG figures written as the stores are;
* :mod:`bigkern.store.formats` — prediction files: zarr, CF netCDF4 and GeoTIFF.

The package's ``__init__`` imports nothing, so the command line checks its paths
with the light modules here before anything heavy loads.
"""
