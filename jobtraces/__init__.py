"""Job traces: the job table every tool reads (`jobtraces.jobtable`), the loaders
that turn public cluster traces and headstart's own CSV into one, headstart's seeded
synthetic workload (`jobtraces.synthetic`), the per-tick demand of a table
(`jobtraces.demand`) and `headstart trace synth|inspect` (`jobtraces.cli`).

It imports only `common`: bucketing, the predictor and the simulator build on it.

    from jobtraces.load import load_trace
    from jobtraces.write import write_job_table
    table = load_trace("openb_pod_list_default.csv.gz")          # detected
    table = load_trace("trace.csv", format="alibaba-dlrm")        # forced

Formats: alibaba-openb (Alibaba GPU 2023 `openb_pod_list_*.csv`), alibaba-dlrm
(Alibaba GPU 2025 `disaggregated_DLRM_trace.csv`), headstart (`write_job_table`).
Gzip is recognised by its magic bytes. Bad input raises InputError naming the file,
line and column; censored rows are kept and counted in `table.censoring`.

The package itself imports nothing: the CLIs read `jobtraces.gpu_sharing` for their
help text without loading pandas.
"""
