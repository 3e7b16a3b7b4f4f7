# cuda_toolkit role: its molecule scenario runs in `make molecule` / `make test`.
MOLECULE_SCENARIOS += cuda
