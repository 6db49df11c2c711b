import pytest

from neuron_migrate.matrix import load_matrix


@pytest.fixture
def m(write_matrix, valid_doc):
    return load_matrix(path=write_matrix(valid_doc))


def test_exact_overload(m):
    v = m.op_status("aten::add.Tensor")
    assert (v.op, v.status, v.source) == ("aten::add.Tensor", "native", "snap")


@pytest.mark.parametrize("spelling", ["aten.add.Tensor", "torch.ops.aten.add.Tensor"])
def test_dotted_spellings(m, spelling):
    assert m.op_status(spelling).op == "aten::add.Tensor"


def test_base_name_then_default(m):
    by_base = m.op_status("aten::eq.Scalar")
    assert by_base.status == "native" and "aten::eq" in by_base.note
    assert m.op_status("aten::linalg_qr.out").status == "cpu_fallback"
    unlisted = m.op_status("aten::sort")
    assert (unlisted.status, unlisted.source) == ("cpu_fallback", "snap")


def test_query_without_overload_takes_its_overloads(m):
    v = m.op_status("aten::add")
    assert v.status == "native" and "aten::add.Tensor" in v.note


def test_default_overload_spelling(m):
    assert m.op_status("aten.linalg_qr.default").op == "aten::linalg_qr"


def test_dtype_rules(m):
    rule = m.dtype_rule("torch.double")
    assert rule is not None and (rule.dtype, rule.runs_as, rule.warn) == (
        "float64",
        "float32",
        True,
    )
    assert m.dtype_rule("float16") is None


def test_namespaces(m):
    assert m.namespace_status("torch.sparse.mm").status == "unsupported"
    assert m.namespace_status("torch.add") is None
    rfft = m.namespace_status("torch.fft.rfft")  # a partial namespace, as the schema allows
    assert rfft.status == "unsupported" and "partial" in rfft.note
    assert m.namespace_status("torch.fft.fftshift").status == "native"
    assert m.namespace_status("torch.fft").status == "partial"


def test_memory_format_and_compile(m):
    assert m.memory_format_status("torch.channels_last").status == "unsupported"
    assert m.memory_format_status("contiguous_format") is None
    assert m.compile.backend == "neuron" and m.compile.requires_dynamic_false


# --- the bundled data ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["2.13.3.0", "2.14.3.0"])
def test_bundled_answers(version):
    b = load_matrix(version)
    assert b.op_status("aten::sort").status == "cpu_fallback"  # generic kernel calls sort.stable
    assert b.op_status("aten::add.Tensor").status == "native"
    assert b.op_status("aten::transpose.int").status == "native"  # device-agnostic view
    assert b.op_status("aten::t").status == "native"
    assert b.op_status("aten::linalg_qr").source == "dev-snapshot-cpu-fallback"
    assert b.op_status("aten::_fft_r2c").status == "cpu_fallback"
    assert b.op_status("c10d::allreduce_").status == "native"
    assert b.op_status("c10d::_reduce_scatter_base_").status == "native"
    assert b.op_status("aten::_sparse_coo_tensor_with_dims_and_tensors").status == "unsupported"
    assert b.op_status("aten::median.dim_values").status == "cpu_fallback"
    assert b.namespace_status("functorch.vmap").status == "unsupported"
    assert b.namespace_status("torch.distributions.Normal").status == "unsupported"
    assert b.namespace_status("torch.nested.nested_tensor").status == "unsupported"
    assert b.memory_format_status("channels_last").message == (
        "Neuron tensors only support contiguous or preserve memory format"
    )
    assert b.compile.modes_with_effect == ("default",)
    assert b.compile.dynamic_true_status == "unsupported"
    assert (b.compile.other_modes, b.compile.failure_raises) == ("warn", True)
    assert b.compile.fallback_env == "TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"
    assert b.compile.fallback_option == "fallback_execution"
    assert b.dtype_rule("int64").runs_as == "int32"
    brief = b.evidence["project-brief"]  # said to be unconfirmed, in words
    assert brief.kind == "unverified" and "no TorchNeuron text" in brief.title


# --- released evidence wins where it speaks ---------------------------------------------------


@pytest.mark.parametrize("version", ["2.13.3.0", "2.14.3.0", "2.13.3.1", "2.14.3.1"])
def test_released_facts_decide_where_they_speak(version):
    b = load_matrix(version)

    def kind(op):
        verdict = b.op_status(op)
        return b.evidence_kind(verdict.source), b.confidence(verdict.source)

    # collectives that DDP, FSDP2, DTensor call, and pipelining's point-to-point: released
    # APIs, but which c10d ops they need is inferred from a trace
    for op in ("c10d::allreduce_", "c10d::_allgather_base_", "c10d::_reduce_scatter_base_"):
        assert (b.op_status(op).status, kind(op)) == ("native", ("released", "inferred"))
    for op in ("c10d::send", "c10d::recv_"):
        verdict = b.op_status(op)
        assert (verdict.status, kind(op)) == ("native", ("released", "inferred"))
        assert "Inferred" in b.evidence[verdict.source].note
    # the functional collectives are named by the release
    assert kind("_c10d_functional::all_reduce") == ("released", "released")
    assert b.op_status("c10d::recv_any_source_").status == "unsupported"
    # quantized operator variants are N; which ops count as such is inferred
    for op in ("aten::quantize_per_tensor", "aten::dequantize.self", "aten::q_scale"):
        assert (b.op_status(op).status, kind(op)) == ("unsupported", ("released", "inferred"))
    assert b.op_status("aten::eq.Tensor").status == "native"
    assert b.op_status("aten::fake_quantize_per_tensor_affine").source != "release-2.33-quantized"
    # the eager fallback rule is released, but that an op no source names falls back is an
    # assumption: the default says so
    assert (b.evidence_kind(b.default.source), b.confidence(b.default.source)) == (
        "assumed",
        "unknown",
    )
    assert b.evidence_kind("generic-cpu-fallback") == "released"
    assert b.evidence_kind(b.compile.source) == "released"


@pytest.mark.parametrize("version", ["2.13.3.0", "2.14.3.0"])
def test_fft_runs_through_the_cpu_fallback(version):
    b = load_matrix(version)
    assert b.namespace_rule("torch.fft.rfft") is None  # no partial split without evidence
    for op in ("aten::_fft_r2c", "aten::_fft_c2r", "aten::_fft_c2c", "aten::fft_hfft"):
        verdict = b.op_status(op)
        assert (verdict.status, verdict.source) == ("cpu_fallback", "dev-snapshot-no-fft-kernel")
    assert "fft" in [u.topic for u in b.unknowns]


@pytest.mark.parametrize("version", ["2.13.3.0", "2.14.3.0"])
def test_vmap_takes_the_func_rule(version):
    b = load_matrix(version)
    assert b.namespace_status("torch.vmap").status == "unsupported"
    assert b.namespace_status("torch.vmap").namespace == "torch.func"


@pytest.mark.parametrize("version", ["2.13.3.0", "2.14.3.0", "2.13.3.1", "2.14.3.1"])
def test_every_evidence_key_has_a_kind(version):
    b = load_matrix(version)
    assert {e.kind for e in b.evidence.values()} <= {
        "released",
        "dev-snapshot",
        "torch-inference",
        "unverified",
        "assumed",
    }
    assert "unclassified" not in {b.evidence_kind(e.source) for e in b.ops.values()}
    assert b.unknowns and all(u.note for u in b.unknowns)
