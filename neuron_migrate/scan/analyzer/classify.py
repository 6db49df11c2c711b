"""Classification: sites in, findings out.

torch_xla uses and XLA idioms are classified by the rules (the same rules the codemod applies);
torch ops and APIs through the API->aten map and the versioned compatibility matrix.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from neuron_migrate.ruleset import Rule
from neuron_migrate.scan.analyzer.availability import settled_guarded_imports
from neuron_migrate.scan.analyzer.fixability import fix_blocker, follower_blocker, needed_by
from neuron_migrate.scan.analyzer.meanings import settle_meanings
from neuron_migrate.scan.analyzer.overloads import DEPENDS, Choice, choose
from neuron_migrate.scan.analyzer.sites import (
    REPORTED,
    UNMAPPED,
    UNREPORTED,
    Site,
    Span,
    torch_api,
)
from neuron_migrate.scan.findings import Finding, Fingerprints, bounded_snippet
from neuron_migrate.scan.scan_data import Context

if TYPE_CHECKING:
    from neuron_migrate.matrix.model import ApiEntry, Matrix

_XLA_ROOTS = ("torch_xla", "torch_neuronx", "neuronx_distributed")
_XLA_CATEGORIES = ("torch_xla", "xla_idiom", "ambiguous")
GUARD_RULE = "NM198"  # its `match.predicates`: the library functions that test for torch_xla
_FLOAT64_NAMES = frozenset(
    {"torch.float64", "torch.double", "torch.DoubleTensor", "torch.cuda.DoubleTensor"}
)
_FLOAT64_METHODS = frozenset({"double"})
# dtype objects other than float64 (`dtype=torch.long`): a name, not an op
_DTYPE_NAMES = frozenset(
    f"torch.{name}"
    for name in [
        "float32",
        "float",
        "float16",
        "half",
        "bfloat16",
        "int64",
        "long",
        "int32",
        "int",
        "int16",
        "short",
        "int8",
        "uint8",
        "bool",
        "complex64",
        "cfloat",
        "complex128",
        "cdouble",
        "float8_e4m3fn",
        "float8_e5m2",
    ]
)
_MEMORY_FORMATS = {
    "torch.channels_last": "channels_last",
    "torch.channels_last_3d": "channels_last",
}
_STATUS_RANK = {"native": 0, "cpu_fallback": 1, "unsupported": 2}
_SEVERITY = {
    "unsupported": "error",
    "cpu_fallback": "warning",
    "float64": "warning",
    "xla": "warning",
    "advice": "warning",
    "native": "info",
}
# Tensor methods that are called for their effect; anything else whose value is thrown away
# (`names.sort()`, `parts.index(x)`) is a list/str/dict method, not a Tensor's.
_EFFECT_METHODS = frozenset({"backward", "record_stream", "share_memory_", "retain_grad"})
# APIs whose ops depend on the autograd graph built before them, not on the call: no static
# prediction is possible (the ops are reported where the forward ops are).
_GRAPH_DEPENDENT = frozenset({"Tensor.backward", "torch.autograd.backward", "torch.autograd.grad"})


class _OpVerdict:
    """A call's verdict from the ops it reaches (`_Classifier.add_op`), its site aside. (A
    plain class: this module's annotations are strings, which a NamedTuple would evaluate.)"""

    __slots__ = ("aten", "confidence", "evidence", "message", "rule", "status")

    def __init__(
        self,
        status: str,
        aten: tuple[str, ...],
        confidence: str,
        rule: Rule,
        message: str,
        evidence: str,
    ) -> None:
        self.status = status
        self.aten = aten
        self.confidence = confidence
        self.rule = rule
        self.message = message
        self.evidence = evidence


class FileClassification:
    __slots__ = ("findings", "unmapped_apis")

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.unmapped_apis: Counter[str] = Counter()


class _Classifier:
    def __init__(self, ctx: Context, path: str, lines: list[str], imports_torch: bool) -> None:
        self.ctx = ctx
        self.path = path
        self.lines = lines
        self.imports_torch = imports_torch
        self.out = FileClassification()
        # How often each (code, api, normalised line) was seen so far: the fingerprint's
        # occurrence number, stamped as each finding is made (findings are made in site order).
        self.seen: Counter[tuple[str, str, str]] = Counter()
        # Each line normalised once (a minified line may hold thousands of findings).
        self.normalised_lines: dict[int, str] = {}
        self.fingerprints = Fingerprints(path)
        # torch_xla call sites by the call's span: a reference given to one follows its fate.
        self.xla_calls: dict[tuple[int, int, int, int], Site] = {}
        # The findings of imports under an availability guard, the source never reads.
        self.guarded_imports: list[int] = []
        # Op verdicts by (API, ops, confidence, overload choice), shared by the context's
        # classifications (`_op_verdicts`): a worker judges each such call once.
        self.op_verdicts = _op_verdicts(ctx)

    def _normalised(self, line: int) -> str:
        """The line's text with its runs of whitespace as one space: what fingerprints hold."""
        found = self.normalised_lines.get(line)
        if found is None:
            text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
            found = self.normalised_lines[line] = " ".join(text.split())
        return found

    # -- building findings ----------------------------------------------------------------

    def add(
        self,
        site: Site,
        rule: Rule,
        *,
        category: str,
        status: str,
        api: str,
        message: str,
        aten: tuple[str, ...] = (),
        replacement: str | None = None,
        fixable: bool = False,
        confidence: str = "high",
        evidence: str = "",
    ) -> None:
        normalised = self._normalised(site.line)
        key = (rule.code, api, normalised)
        occurrence = self.seen[key]
        self.seen[key] = occurrence + 1
        snippet = bounded_snippet(self.lines, site.line, site.col)
        self.out.findings.append(
            Finding(
                code=rule.code,
                category=category,
                status=status,
                severity=_SEVERITY[status],
                path=self.path,
                line=site.line,
                col=site.col,
                end_line=site.end_line,
                end_col=site.end_col,
                api=api,
                message=message,
                aten=aten,
                replacement=replacement,
                fixable=fixable,
                confidence=confidence,  # type: ignore[arg-type]
                evidence_confidence=evidence,
                snippet=snippet,
                fingerprint=self.fingerprints.of(rule.code, api, normalised, occurrence),
            )
        )

    def add_rule_finding(self, site: Site, rule: Rule, api: str, category: str) -> None:
        if site.ambiguous:
            ambiguous = self.ctx.rules.for_analyzer("ambiguous-name")
            meanings = ", ".join(m for m in site.ambiguous)
            self.add(
                site,
                ambiguous,
                category="ambiguous",
                status="xla",
                api=api,
                message=f"name has several possible meanings ({meanings}); left for a person",
            )
            return
        if rule.keeps:  # nothing to migrate, and nothing for a `--fail-on xla` gate
            self.add(site, rule, category=category, status="advice", api=api, message=rule.summary)
            return
        blocker = self.blocker(rule, site) if rule.has_rewrite else None
        # What the rule says of the value the site sets (`XLA_USE_BF16 = "0"`: drop it).
        case = rule.value_case(site.env_value, site.env_unset) if site.env_setting else None
        summary = case.message if case is not None else rule.summary
        self.add(
            site,
            rule,
            category=category,
            status="advice" if rule.advises else "xla",
            api=api,
            message=summary
            if blocker is None or blocker == summary
            else f"{summary} (not rewritten: {blocker})",
            replacement=rule.replacement,
            fixable=rule.has_rewrite and blocker is None,
        )

    def blocker(self, rule: Rule, site: Site) -> str | None:
        """Why `rewrite` leaves the site for a person (`fixability`), None when it rewrites it."""
        call = self.xla_calls.get(site.argument_of) if site.argument_of else None
        if call is not None:
            call_rule = self.ctx.rules.for_reference(call.qualname or "")
            if call_rule is not None and call_rule.match.analyzer is not None:
                call_rule = None
            if (reason := follower_blocker(rule, call_rule, call)) is not None:
                return reason
        return fix_blocker(rule, site)

    def settle_guarded_imports(self, source: str) -> None:
        """An import the source never reads, under a guard the rewrite resolves once the code
        it guards is migrated (`if _xla_available(): import ...xla_backend`, an own function
        that tries `import torch_xla`), goes with that guard: fixable when every other
        torch_xla site of the file is (`availability.settled_guarded_imports`)."""
        if not self.guarded_imports:
            return
        findings = self.out.findings
        held = set(self.guarded_imports)
        if any(
            not f.fixable and f.category in _XLA_CATEGORIES
            for k, f in enumerate(findings)
            if k not in held
        ):
            return
        library = self.ctx.rules.get(GUARD_RULE).match.predicates
        lines = settled_guarded_imports(ast.parse(source), library)
        for k in self.guarded_imports:
            finding = findings[k]
            if finding.line in lines:
                rule = self.ctx.rules.get(finding.code)
                findings[k] = finding._replace(fixable=rule.has_rewrite, message=rule.summary)

    def settle_side_effect_imports(self) -> None:
        """A side-effect import stays while a site that needs it is left for a person (the
        rule's `needed_by`): then it is not fixable either."""
        findings = self.out.findings
        holders = [
            (i, codes)
            for i, f in enumerate(findings)
            if f.fixable and (codes := needed_by(self.ctx.rules.get(f.code)))
        ]
        if not holders:
            return
        left = {f.code for f in findings if not f.fixable and f.status == "xla"}
        for i, codes in holders:
            finding = findings[i]
            kept_by = sorted(codes & left)
            if kept_by:
                reason = f"kept while {', '.join(kept_by)} sites are left for a person"
                findings[i] = finding._replace(
                    fixable=False, message=f"{finding.message} (not rewritten: {reason})"
                )

    # -- per site kind ----------------------------------------------------------------------

    def classify(self, site: Site) -> None:
        if site.kind == "import":
            self.classify_import(site)
        elif site.kind == "idiom":
            rule = self.ctx.rules.for_idiom(site.idiom or "", site.detail)
            if rule is not None:
                api = f"{site.idiom}:{site.detail}" if site.detail else site.idiom or ""
                self.add_rule_finding(site, rule, api, "xla_idiom")
        elif site.kind == "method":
            if self.imports_torch:
                self.classify_method(site)
        elif site.qualname:
            root = site.qualname.partition(".")[0]
            if root in _XLA_ROOTS:
                rule = self.ctx.rules.for_reference(site.qualname)
                if rule is not None:
                    self.add_rule_finding(site, rule, site.qualname, "torch_xla")
            elif root in ("torch", "functorch"):
                self.classify_torch(site, site.qualname)

    def classify_import(self, site: Site) -> None:
        # A used import is reported through its uses; an unused one is a side-effect import
        # (`import torch_xla.distributed.xla_backend` registers the 'xla' process group).
        if site.used or not site.qualname:
            return
        rule = self.ctx.rules.for_import(site.qualname)
        if rule is not None:
            before = len(self.out.findings)
            self.add_rule_finding(site, rule, site.qualname, "torch_xla")
            if site.guarded and not site.ambiguous and len(self.out.findings) > before:
                self.guarded_imports.append(before)

    def classify_torch(self, site: Site, qualname: str) -> None:
        ctx = self.ctx
        qualname = torch_api(qualname)
        advice = ctx.rules.for_reference(qualname)
        if advice is not None and advice.keeps:  # advice about a torch API itself (FSDP1)
            self.add(
                site, advice, category="api", status="advice", api=qualname, message=advice.summary
            )
            return
        namespace = ctx.matrix.namespace_status(qualname)
        if namespace is not None:
            partial = namespace.namespace == "torch.fft"
            self.add(
                site,
                ctx.rules.for_analyzer("fft-partial" if partial else "unsupported-namespace"),
                category="namespace",
                status=namespace.status,
                api=qualname,
                message=f"{qualname}: {namespace.status} on torch-neuronx {ctx.matrix.version}"
                f"{' (' + namespace.note + ')' if namespace.note else ''}"
                f"{_sure(ctx.matrix, [namespace.source])}",
                evidence=ctx.matrix.surest([namespace.source]),
            )
            return
        row = ctx.matrix.api_status(qualname)
        if self.add_table_row(site, qualname, row):
            return
        if row is not None and row.status == "unsupported":
            # An N row of an imported official table: the API is refused whatever ops it reaches.
            self.add(
                site,
                ctx.rules.for_analyzer("op-unsupported"),
                category="op",
                status="unsupported",
                api=qualname,
                message=f"{qualname}: {_refused_by(ctx.matrix, row.source)} torch-neuronx "
                f"{ctx.matrix.version}{' (' + row.note + ')' if row.note else ''}"
                f"{_sure(ctx.matrix, [row.source])}",
                evidence=ctx.matrix.surest([row.source]),
            )
            return
        if qualname in _FLOAT64_NAMES:
            self.add_float64(site, qualname)
            return
        if qualname in _DTYPE_NAMES:
            return  # `dtype=torch.long` converts nothing by itself
        if qualname in _MEMORY_FORMATS:
            rule = ctx.matrix.memory_format_status(_MEMORY_FORMATS[qualname])
            if rule is not None:
                self.add(
                    site,
                    ctx.rules.for_analyzer("channels-last-refused"),
                    category="memory_format",
                    status=rule.status,
                    api=qualname,
                    message=f"{rule.message}{_sure(ctx.matrix, [rule.source])}",
                    replacement="torch.contiguous_format",
                    evidence=ctx.matrix.surest([rule.source]),
                )
            return
        if qualname == "torch.compile" and site.kind == "call":
            self.classify_compile(site)
        aten = ctx.api_map.aten_for(qualname)
        if aten is None:
            if site.kind == "call":
                self.out.unmapped_apis[qualname] += 1
            return
        choice = None
        if site.kind == "call":
            patterns = ctx.api_map.patterns_for(qualname)
            choice = choose(patterns, site.args, site.kwargs, method=False)
        self.add_op(site, qualname, aten, "high", choice)

    def classify_method(self, site: Site) -> None:  # what `reported_method` tells ahead
        name = site.detail or ""
        if site.compiled and name == "step" and site.qualname:
            self.add_compiled_step(site, site.qualname)
            return
        if site.discarded and not name.endswith("_") and name not in _EFFECT_METHODS:
            return
        if site.placement == "host":
            return  # a tensor that never reaches the device: no device op, no downcast
        if name in _FLOAT64_METHODS:
            self.add_float64(site, f"Tensor.{name}", confidence="low")
            return
        if self.add_table_row(site, f"Tensor.{name}", self.ctx.matrix.api_status(f"Tensor.{name}")):
            return
        aten = self.ctx.api_map.aten_for_tensor_method(name)
        if aten is not None:
            patterns = self.ctx.api_map.patterns_for(f"Tensor.{name}")
            choice = choose(patterns, site.args, site.kwargs, method=True)
            self.add_op(site, f"Tensor.{name}", aten, "low", choice)

    def add_table_row(self, site: Site, api: str, row: ApiEntry | None) -> bool:
        """A Y row of an imported official table: the table's word on this API wins over the
        statuses of the ops the API map says it reaches (and over its namespace's rule). Its
        finding is native, its evidence the table's. False when there is no such row."""
        if row is None or row.status != "native":
            return False
        matrix = self.ctx.matrix
        kind = f" ({row.kind.replace('_', ' ')})" if row.kind else ""
        self.add(
            site,
            self.ctx.rules.for_analyzer("op-native"),
            category="op",
            status="native",
            api=api,
            message=f"{api}: Y{kind} in the official table of torch-neuronx {matrix.version}"
            f"{_sure(matrix, [row.source])}",
            aten=tuple(self.ctx.api_map.aten_for(api) or ()),
            evidence=matrix.surest([row.source]),
        )
        return True

    def add_float64(self, site: Site, api: str, confidence: str = "high") -> None:
        matrix = self.ctx.matrix
        rule = matrix.dtype_rule("float64")
        runs_as = rule.runs_as if rule else "float32"
        source = rule.source if rule else "unknown"
        self.add(
            site,
            self.ctx.rules.for_analyzer("float64-as-float32"),
            category="dtype",
            status="float64",
            api=api,
            message=f"float64 runs as {runs_as} on the device: precision is lost"
            f"{_sure(matrix, [source])}",
            replacement="torch.float32 (or keep the float64 math on CPU)",
            confidence=confidence,
            evidence=matrix.surest([source]),
        )

    def add_op(
        self,
        site: Site,
        api: str,
        aten: tuple[str, ...],
        confidence: str,
        choice: Choice | None = None,
    ) -> None:
        if api in _GRAPH_DEPENDENT or site.placement == "host":
            return  # a host-side call (`torch.randperm(n)`, data built on the CPU): no device op
        if site.placement == "unknown":
            confidence = "low"  # its tensors may be on the host: the code cannot tell
        key = (api, aten, confidence, choice)
        verdict = self.op_verdicts.get(key)
        if verdict is None:
            verdict = self.op_verdicts[key] = self._op_verdict(api, aten, confidence, choice)
        if site.compiled and verdict.status != "native":
            self.add_in_graph(site, api, verdict.aten, verdict.status)
            return
        self.add(
            site,
            verdict.rule,
            category="op",
            status=verdict.status,
            api=api,
            message=verdict.message,
            aten=verdict.aten,
            confidence=verdict.confidence,
            evidence=verdict.evidence,
        )

    def _op_verdict(
        self, api: str, aten: tuple[str, ...], confidence: str, choice: Choice | None
    ) -> _OpVerdict:
        """What the matrix says of a call of `api` reaching `aten` (or the ops of `choice`):
        the same for every such call, wherever it is."""
        matrix = self.ctx.matrix
        if choice is not None:
            aten = choice.ops
        verdicts = [matrix.op_status(op) for op in aten]
        status = self._worst(aten)
        if choice is not None and choice.depends:
            # The call does not show which pattern it is: the status most of them share (the
            # milder on a tie), never simply the worst; every pattern is named.
            statuses = [self._worst(ops) for _, ops in choice.others]
            status = min(statuses, key=lambda s: (-statuses.count(s), _STATUS_RANK.get(s, 0)))
            confidence = "low"
        if status == "native":
            detail = "native"
        else:
            offenders = sorted({v.op for v in verdicts if v.status == status})
            detail = f"{status} ({', '.join(offenders)})"
        patterns = ""
        if choice is not None and choice.others:
            named = "; ".join(
                f"{shape}: {', '.join(ops)} ({self._worst(ops)})" for shape, ops in choice.others
            )
            lead = DEPENDS if choice.depends else "with inputs of other ranks"
            patterns = f"; {lead}: {named}"
        sources = sorted({v.source for v in verdicts if v.status == status})
        return _OpVerdict(
            status,
            aten,
            confidence,
            self.ctx.rules.for_analyzer(f"op-{status.replace('_', '-')}"),
            f"{api}: {detail} on torch-neuronx {matrix.version}{_sure(matrix, sources)}"
            + patterns
            + _by_dtype(matrix, aten),
            matrix.surest(sources),
        )

    def add_in_graph(self, site: Site, api: str, aten: tuple[str, ...], status: str) -> None:
        """A non-native op in a region compiled for the neuron backend, which lowers the whole
        graph. An op whose eager status the matrix's `compile.graph_refuses` names has no
        lowering: the compile fails (no eager fallback by default). Any other (no eager device
        kernel) is lowered with the graph: neither a CPU fallback nor a refusal, at low
        confidence, as which ops the released compiler lowers is not known."""
        matrix = self.ctx.matrix
        rules = matrix.compile
        refused = status in rules.graph_refuses
        verdicts = [v for v in map(matrix.op_status, aten) if v.status == status]
        named = sorted({v.op for v in verdicts})
        # Both must hold: the op has that eager status, and such ops fail (or join) a graph.
        sure = _weakest(matrix, [rules.source, *(v.source for v in verdicts)])
        offenders, verb = ", ".join(named), "are" if len(named) > 1 else "is"
        at = site.compiled_at or f"line {site.compiled}"
        where = f"{api}: in code compiled by torch.compile at {at}: "
        if refused:
            outcome = (
                "cannot be lowered in a neuron graph, so the compile fails "
                f"({rules.fallback_env or 'compile failure'} defaults to True)"
            )
        else:
            outcome = (
                f"{verb} lowered with the rest of the neuron graph, not run on the CPU (only "
                f"{', '.join(rules.graph_refuses)} ops fail a graph; which ops the released "
                "compiler lowers is not known)"
            )
        self.add(
            site,
            self.ctx.rules.for_analyzer("compile-graph-refused" if refused else "op-native"),
            category="compile" if refused else "op",
            status="unsupported" if refused else "native",
            api=api,
            message=f"{where}{offenders} ({status} in eager mode) {outcome}, confidence {sure} "
            f"[{rules.source}]",
            aten=aten,
            confidence="high" if refused and site.placement == "device" else "low",
            evidence=sure,
        )

    def add_compiled_step(self, site: Site, api: str) -> None:
        """`opt.step()` inside compiled code: the ops of the optimizer's step as torch.compile
        graphs it (functional `_foreach_*` ops, the API map's `compiled_steps`), judged as any
        op of a compiled region. Nothing when the map has no such step or all of it is native."""
        ops = self.ctx.api_map.compiled_steps.get(api.removesuffix(".step"), ())
        status = self._worst(ops)
        if ops and status != "native":
            self.add_in_graph(site, api, ops, status)

    def _worst(self, ops: tuple[str, ...]) -> str:
        verdicts = [self.ctx.matrix.op_status(op).status for op in ops]
        return max(verdicts, key=lambda v: _STATUS_RANK.get(v, 0), default="native")

    def classify_compile(self, site: Site) -> None:
        kwargs = dict(site.kwargs)
        rules = self.ctx.rules
        compile_rules = self.ctx.matrix.compile
        dynamic = kwargs.get("dynamic", "<absent>")
        if dynamic == "True":
            self.add(
                site,
                rules.for_analyzer("compile-dynamic-true"),
                category="compile",
                status="unsupported",
                api="torch.compile",
                message="torch.compile(dynamic=True) is rejected by the neuron backend"
                f"{_sure(self.ctx.matrix, [compile_rules.source])}",
                replacement="dynamic=False",
                evidence=self.ctx.matrix.surest([compile_rules.source]),
            )
        elif dynamic != "False" and compile_rules.requires_dynamic_false:
            # Released 2.33 compiles with `dynamic` unset (each new shape recompiles); only a
            # matrix that says otherwise, such as a pre-release one, asks for dynamic=False.
            self.add(
                site,
                rules.for_analyzer("compile-without-dynamic-false"),
                category="compile",
                status="advice",
                api="torch.compile",
                message="torch.compile without dynamic=False: this matrix's neuron backend "
                f"compiles static shapes only; pass dynamic=False [{compile_rules.source}]",
                replacement="dynamic=False",
            )
        mode = kwargs.get("mode")
        if "mode" in kwargs and mode not in [repr(m) for m in compile_rules.modes_with_effect]:
            self.add(
                site,
                rules.for_analyzer("compile-mode-ignored"),
                category="compile",
                status="advice",
                api="torch.compile",
                message=f"torch.compile(mode={mode}) has no effect on the neuron backend: only "
                f"{', '.join(compile_rules.modes_with_effect)} [{compile_rules.source}]",
            )


def reported_method(ctx: Context, name: str) -> bool:
    """Whether a method call of this name may be reported (`_Classifier.classify_method`):
    an optimizer's step, a float64 method, a Tensor method of the table or of the API map.
    The scan makes no site of any other method call."""
    return (
        name == "step"
        or name in _FLOAT64_METHODS
        or ctx.matrix.api_status(f"Tensor.{name}") is not None
        or ctx.api_map.aten_for_tensor_method(name) is not None
    )


def reference_verdict(ctx: Context, qualname: str) -> str:
    """What `_Classifier.classify_torch` makes of a reference to `qualname` (a torch or
    functorch API), asked ahead: REPORTED where a finding may come of it, UNMAPPED where the
    API map does not know it (a call is counted in `unmapped_apis`, a name gives nothing),
    UNREPORTED where nothing comes of it (a dtype object). The scan makes no site of the last
    two: most references in torch's own sources (`torch.Tensor` in an annotation,
    `torch._check(...)`) are such. `qualname` is as `classify_torch` reads it (`torch_api`)."""
    advice = ctx.rules.for_reference(qualname)
    if advice is not None and advice.keeps:
        return REPORTED
    if ctx.matrix.namespace_status(qualname) is not None:
        return REPORTED
    row = ctx.matrix.api_status(qualname)
    if row is not None and row.status in ("native", "unsupported"):
        return REPORTED
    if qualname in _FLOAT64_NAMES:
        return REPORTED
    if qualname in _DTYPE_NAMES:
        return UNREPORTED
    if qualname in _MEMORY_FORMATS:
        found = ctx.matrix.memory_format_status(_MEMORY_FORMATS[qualname]) is not None
        return REPORTED if found else UNREPORTED
    if qualname == "torch.compile":
        return REPORTED  # its call's arguments are read
    return REPORTED if ctx.api_map.aten_for(qualname) is not None else UNMAPPED


# Each context's verdicts, by qualified name: a worker judges each API once, not once a file.
_VERDICTS: dict[int, tuple[Context, dict[Any, Any]]] = {}
# Each context's op verdicts (`_Classifier.add_op`), by (API, ops, confidence, choice).
_OP_VERDICTS: dict[int, tuple[Context, dict[Any, Any]]] = {}
# The contexts whose verdicts are kept: as many as `context_for` keeps loaded.
_CONTEXTS_KEPT = 4


def _per_context(caches: dict[int, tuple[Context, dict[Any, Any]]], ctx: Context) -> dict[Any, Any]:
    """`ctx`'s own cache among `caches` (by identity: a context holds its data as loaded); the
    oldest context's is dropped past a few, as `context_for` drops the context."""
    entry = caches.get(id(ctx))
    if entry is None or entry[0] is not ctx:
        while len(caches) >= _CONTEXTS_KEPT:
            del caches[next(iter(caches))]
        entry = caches[id(ctx)] = (ctx, {})
    return entry[1]


def _op_verdicts(ctx: Context) -> dict[tuple[object, ...], _OpVerdict]:
    return _per_context(_OP_VERDICTS, ctx)


def reference_verdicts(ctx: Context) -> Callable[[str], str]:
    """`reference_verdict` for `ctx`, each qualified name judged once in the process."""
    known: dict[str, str] = _per_context(_VERDICTS, ctx)

    def verdict(qualname: str) -> str:
        found = known.get(qualname)
        if found is None:
            found = known[qualname] = reference_verdict(ctx, qualname)
        return found

    return verdict


def classify_sites(
    ctx: Context,
    path: str,
    source: str,
    sites: list[Site],
    imports_torch: bool | None = None,
    unmapped: Sequence[tuple[Span, str]] = (),
) -> FileClassification:
    """`imports_torch`: whether the module refers to torch or torch_xla, where `sites` may
    leave out what says so (`reference_verdict`); None: read from `sites`. `unmapped`: calls
    of torch APIs the API map lacks, left without a site (their would-be span, the API, in
    order), counted in their turn among the sites'."""
    lines = source.splitlines()
    if imports_torch is None:
        imports_torch = any(
            s.qualname and s.qualname.partition(".")[0] in ("torch", "torch_xla") for s in sites
        )
    sites = settle_meanings(sites, ctx.rules)
    classifier = _Classifier(ctx, path, lines, imports_torch)
    classifier.xla_calls = {
        s.call_span: s
        for s in sites
        if s.kind == "call" and s.call_span and (s.qualname or "").startswith("torch_xla")
    }
    counts = classifier.out.unmapped_apis
    pending = iter(unmapped)
    waiting = next(pending, None)
    for site in sites:
        while waiting is not None and (waiting[0], "call") < (site.span, site.kind):
            counts[waiting[1]] += 1
            waiting = next(pending, None)
        classifier.classify(site)
    while waiting is not None:
        counts[waiting[1]] += 1
        waiting = next(pending, None)
    classifier.settle_side_effect_imports()
    classifier.settle_guarded_imports(source)
    return classifier.out


def _sure(matrix: Matrix, sources: list[str]) -> str:
    """A verdict's message tail: how sure the matrix is, then the evidence keys it rests on."""
    return f", confidence {matrix.surest(sources)} [{', '.join(sources)}]"


def _weakest(matrix: Matrix, sources: list[str]) -> str:
    """The least sure confidence among `sources`: what a verdict needing all of them has."""
    from neuron_migrate.matrix.model import CONFIDENCES

    order = list(CONFIDENCES)
    return max((matrix.confidence(s) for s in sources), key=order.index, default="unknown")


def _refused_by(matrix: Matrix, source: str) -> str:
    """How an API row that refuses an API is named: an official table's N, or the matrix's own
    row (an API a later release names as newly working)."""
    if matrix.evidence_kind(source) == "official-table":
        return "N (not supported) in the official table of"
    return "not supported in"


_DTYPE_ROWS: dict[int, tuple[Any, bool]] = {}  # id(matrix.apis) -> (apis, any row names dtypes)


def _by_dtype(matrix: Matrix, aten: tuple[str, ...]) -> str:
    """What an imported table says of some dtypes of these ops (`aten::add.Tensor` falls back
    for float64): the scan cannot see a tensor's dtype, the simulated device decides per call."""
    apis = matrix.apis
    known = _DTYPE_ROWS.get(id(apis))
    if known is None or known[0] is not apis:  # once per matrix: this runs at every op call
        known = _DTYPE_ROWS[id(apis)] = (apis, any(row.dtypes for row in apis.values()))
    if not known[1]:  # the bundled matrices: no row names dtypes
        return ""
    said = [
        f"{op} falls back for {', '.join(dtypes)}"
        for op in aten
        if (dtypes := matrix.dtype_fallbacks(op))
    ]
    return f"; {'; '.join(said)} (a run records each call by its dtype)" if said else ""
