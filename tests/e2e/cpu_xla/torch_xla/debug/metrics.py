def metrics_report():
    return "Metric: CompileTime\n  TotalSamples: 0"
