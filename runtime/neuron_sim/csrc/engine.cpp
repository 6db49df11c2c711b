// The simulated neuron device as a C++ PrivateUse1 backend (the "native" engine).
//
// Neuron tensors are real PrivateUse1 tensors over host memory. Every op on them reaches one
// boxed kernel, `run_op`: it asks the matrix's verdict once per op (a Python callback), counts
// the call, points CPU tensors at the device arguments' memory (no copy), redispatches to the
// CPU kernels and hands the results back as device tensors over the same memory. Python is
// called only where the runtime records something new: an op's first calls (its user source
// line, sampled like the Python engine's), a refusal, a float64 tensor made on the device, a
// refused memory format. Everything else stays in C++, which is what the overhead targets need
// (bench/README.md, "The floor of a C++ backend").

#include <torch/extension.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/impl/alloc_cpu.h>
#include <torch/csrc/Dtype.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/library.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

namespace py = pybind11;

// The simulated cores: how many this process sees (`torch.neuron.device_count()`), the current
// one (`set_device`), and the one the op running on this thread computes on (its first device
// argument's, or the device it was asked to make a tensor on). New device memory belongs to the
// op's core, or to the current one outside ops.
std::atomic<int> visible_cores{1};
std::atomic<int> current_core{0};
thread_local int op_core = -1;

c10::Device active_device() {
  return c10::Device(c10::DeviceType::PrivateUse1,
                     static_cast<c10::DeviceIndex>(op_core >= 0 ? op_core : current_core.load()));
}

// While an op runs: its core, restored after (ops nest: a kernel may call another).
struct OpCore {
  int previous;
  explicit OpCore(int core) : previous(op_core) {
    if (core >= 0) op_core = core;
  }
  ~OpCore() { op_core = previous; }
};

void check_device_index(const c10::Device& device) {
  TORCH_CHECK(!device.has_index() || device.index() < visible_cores.load(),
              "neuron device index ", static_cast<int>(device.index()), " is out of range: this process sees ",
              visible_cores.load(), " NeuronCore(s) (torch.neuron.device_count() == ",
              visible_cores.load(), "; NEURON_RT_VISIBLE_CORES decides)");
}

// The core an explicit device argument names (-1: none, or no index).
int core_of(const std::optional<at::Device>& device) {
  if (!device || device->type() != c10::DeviceType::PrivateUse1) return -1;
  check_device_index(*device);
  return device->has_index() ? device->index() : -1;
}
const c10::Device kHost(c10::DeviceType::CPU);
const c10::DispatchKeySet kDeviceKeys({c10::DispatchKey::PrivateUse1,
                                       c10::DispatchKey::AutogradPrivateUse1,
                                       c10::DispatchKey::ADInplaceOrView});

enum Status : int { kNative = 0, kFallback = 1, kUnsupported = 2 };

// ---------------------------------------------------------------------------------------------
// Memory: every byte a device storage holds, counted from allocation to free.

struct Ledger {
  std::atomic<int64_t> allocated{0}, peak{0}, allocations{0}, frees{0}, live{0};

  void grow(int64_t n) {
    const int64_t now = allocated += n;
    int64_t seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
    ++allocations;
    ++live;
  }
  void shrink(int64_t n) {
    allocated -= n;
    ++frees;
    --live;
  }
} ledger;

// The context of a device allocation: its size, for the ledger, and what owns the memory
// (nothing for the allocator's own blocks; the CPU tensor whose memory a result adopted).
struct Block {
  int64_t nbytes;
  void* raw;                     // freed with free_cpu when `owner` is empty
  std::unique_ptr<at::Tensor> owner;
};

void free_block(void* ctx) {
  auto* block = static_cast<Block*>(ctx);
  ledger.shrink(block->nbytes);
  if (!block->owner) c10::free_cpu(block->raw);
  delete block;
}

struct HostAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    void* p = n ? c10::alloc_cpu(n) : nullptr;
    auto* block = new Block{static_cast<int64_t>(n), p, nullptr};
    ledger.grow(block->nbytes);
    return {p, block, &free_block, active_device()};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};
HostAllocator host_allocator;

// A device DataPtr over the memory of the CPU tensor `owner`, which it keeps alive.
c10::DataPtr adopt(const at::Tensor& owner) {
  const auto& storage = owner.storage();
  auto* block = new Block{static_cast<int64_t>(storage.nbytes()), nullptr,
                          std::make_unique<at::Tensor>(owner)};
  ledger.grow(block->nbytes);
  return {storage.mutable_data(), block, &free_block, active_device()};
}

// Pinned host memory (`pin_memory=True`, DataLoader's pinning thread): ordinary host memory
// whose blocks are remembered, so `is_pinned()` answers as on a device with a DMA engine.
std::mutex pinned_mutex;
std::unordered_set<const void*> pinned_blocks;

void free_pinned(void* p) {
  {
    std::lock_guard<std::mutex> lock(pinned_mutex);
    pinned_blocks.erase(p);
  }
  c10::free_cpu(p);
}

struct PinnedAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    void* p = n ? c10::alloc_cpu(n) : nullptr;
    if (p) {
      std::lock_guard<std::mutex> lock(pinned_mutex);
      pinned_blocks.insert(p);
    }
    return {p, p, &free_pinned, kHost};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};
PinnedAllocator pinned_allocator;

// ---------------------------------------------------------------------------------------------
// Device plumbing torch asks a PrivateUse1 backend for.

struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
  c10::Device exchangeDevice(c10::Device d) const override {
    const c10::Device previous = getDevice();
    setDevice(d);
    return previous;
  }
  c10::Device getDevice() const override {
    return c10::Device(c10::DeviceType::PrivateUse1,
                       static_cast<c10::DeviceIndex>(current_core.load()));
  }
  void setDevice(c10::Device d) const override {
    check_device_index(d);
    if (d.has_index()) current_core = d.index();
  }
  void uncheckedSetDevice(c10::Device d) const noexcept override {
    if (d.has_index() && d.index() < visible_cores.load()) current_core = d.index();
  }
  // One stream per core, and events that are complete when recorded: every op has finished
  // when it returns (the device computes on the host, in program order).
  c10::Stream getStream(c10::Device d) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getNewStream(c10::Device d, int priority) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device d, bool) const override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override { return s; }
  void record(void** event, const c10::Stream&, const c10::DeviceIndex, const c10::EventFlag)
      const override {
    if (*event == nullptr) *event = reinterpret_cast<void*>(1);
  }
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  void destroyEvent(void*, const c10::DeviceIndex) const noexcept override {}
  bool queryStream(const c10::Stream&) const override { return true; }
  void synchronizeStream(const c10::Stream&) const override {}
  void synchronizeEvent(void*) const override {}
  void synchronizeDevice(const c10::DeviceIndex) const override {}
  double elapsedTime(void*, void*, const c10::DeviceIndex) const override { return 0.0; }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(visible_cores.load());
  }
};

struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(visible_cores.load());
  }
  at::Device getDeviceFromPtr(void*) const override { return active_device(); }
  // Neuron tensors compute on the host, so their random numbers come from the host generator.
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    return at::detail::getDefaultCPUGenerator();
  }
  bool isPinnedPtr(const void* data) const override {
    std::lock_guard<std::mutex> lock(pinned_mutex);
    return pinned_blocks.count(data) > 0;
  }
  c10::Allocator* getPinnedMemoryAllocator() const override { return &pinned_allocator; }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const override;
};

// ---------------------------------------------------------------------------------------------
// What the runtime's Python side is told, and asks.

struct OpState {
  std::string name;
  int status = kNative;
  bool cpu_tensor_ok = false;   // takes non-scalar CPU tensors beside device ones (transfers)
  uint64_t host_results = 0;    // results torch keeps on the host (bit per position)
  int64_t count = 0;
  bool metadata_only = false;   // a view or an in-place view op
  bool asynchronous = false;    // c10d: its work may use the tensors after the op returns
  std::unordered_map<int, int64_t> site_counts;  // user line (site id) -> calls, GIL-guarded
  std::unordered_map<int, int64_t> caller_counts;  // lines that called into those -> calls
  // The dtypes an imported table gives a status of their own (`aten::add.Tensor` falls back
  // for float64): a call in one of them is counted on that dtype's state (`dtype_states`).
  std::vector<std::pair<at::ScalarType, OpState*>> by_dtype;
};

struct Callbacks {
  py::object describe;        // (name) -> (status, cpu_tensor_ok, host_result_positions,
                              //           ((dtype, name of its state, status), ...))
  py::object first_use;       // (name): the op's first call (its first line, a fallback warning)
  py::object is_user_file;    // (code filename) -> whether it is the user's code
  py::object location;        // (code filename, line) -> "file:line" as the trace writes it
  py::object refuse;          // (name) -> raises the refusal naming op and line
  py::object downcast;        // (logical dtype name, stored-as name): a tensor made narrower
  py::object memory_format;   // (format name) -> raises the refusal
};
Callbacks* callbacks = nullptr;  // set by `install`; lives for the process
int64_t location_samples = 1024;
bool downcast_float64 = false;   // float64 stored as float64, computed as float32
bool narrow_int64 = false;       // int64 stored as int64, its values kept in int32 range

std::mutex states_mutex;
std::unordered_map<const c10::FunctionSchema*, std::unique_ptr<OpState>> states;
std::vector<std::unique_ptr<OpState>> dtype_states;  // an op's states for single dtypes

// Set while an accepted compiled graph runs: its ops are the graph's, counted by the compile
// record, not as eager ops.
thread_local bool in_graph = false;
// Set while a metadata op runs on device tensors: the ops torch calls inside it (`t_` calls
// `transpose_`) are part of it, not the user's.
thread_local bool nested = false;

std::string op_name(const c10::FunctionSchema& schema) {
  return schema.overload_name().empty() ? schema.name()
                                        : schema.name() + "." + schema.overload_name();
}

bool touches_metadata_only(const c10::OperatorHandle& op);
bool is_scalar_type_arg(const c10::Argument& arg);

OpState& state_for(const c10::FunctionSchema& schema,
                   const c10::OperatorHandle* handle = nullptr) {
  {
    std::lock_guard<std::mutex> lock(states_mutex);
    auto found = states.find(&schema);
    if (found != states.end()) return *found->second;
  }
  auto state = std::make_unique<OpState>();
  state->name = op_name(schema);
  state->asynchronous = state->name.rfind("c10d::", 0) == 0;
  if (handle) state->metadata_only = touches_metadata_only(*handle);
  {
    py::gil_scoped_acquire gil;
    auto verdict = callbacks->describe(state->name).cast<py::tuple>();
    state->status = verdict[0].cast<int>();
    state->cpu_tensor_ok = verdict[1].cast<bool>();
    for (auto position : verdict[2].cast<py::tuple>()) state->host_results |= 1ull << position.cast<int>();
    for (auto split : verdict[3].cast<py::tuple>()) {
      auto entry = split.cast<py::tuple>();
      auto one = std::make_unique<OpState>();
      one->name = entry[1].cast<std::string>();
      one->status = entry[2].cast<int>();
      one->cpu_tensor_ok = state->cpu_tensor_ok;
      one->host_results = state->host_results;
      one->asynchronous = state->asynchronous;
      one->metadata_only = state->metadata_only;
      const auto dtype = reinterpret_cast<THPDtype*>(entry[0].ptr())->scalar_type;
      state->by_dtype.emplace_back(dtype, one.get());
      std::lock_guard<std::mutex> lock(states_mutex);
      dtype_states.push_back(std::move(one));
    }
  }
  std::lock_guard<std::mutex> lock(states_mutex);
  auto& slot = states[&schema];
  if (!slot) slot = std::move(state);
  return *slot;
}

// The state a call is counted on: the state of the first dtype with a status of its own among
// its device tensors' dtypes and a dtype it is asked for, else the op's.
OpState& state_by_dtype(OpState& state, const c10::FunctionSchema& schema,
                        const torch::jit::Stack& stack) {
  auto lookup = [&](at::ScalarType type) -> OpState* {
    for (const auto& entry : state.by_dtype)
      if (entry.first == type) return entry.second;
    return nullptr;
  };
  const auto& arguments = schema.arguments();
  const size_t first = stack.size() - arguments.size();
  for (size_t i = 0; i < arguments.size(); ++i) {
    const auto& value = stack[first + i];
    OpState* found = nullptr;
    if (value.isTensor()) {
      const auto& t = value.toTensor();
      if (t.defined() && t.device().type() == c10::DeviceType::PrivateUse1)
        found = lookup(t.scalar_type());
    } else if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorList())
        if (!found && t.defined() && t.device().type() == c10::DeviceType::PrivateUse1)
          found = lookup(t.scalar_type());
    } else if (value.isInt() && is_scalar_type_arg(arguments[i])) {
      found = lookup(static_cast<at::ScalarType>(value.toInt()));
    }
    if (found) return *found;
  }
  return state;
}

// The user's source lines behind an op: the innermost Python frame in the user's code (its
// site), and the user frames that called into it (`callers`, each site once). Frames are walked
// here, not in Python, and each call site (code object, bytecode offset) is turned into its
// "file:line" once; the GIL guards these tables.
struct SiteHash {
  size_t operator()(const std::pair<PyObject*, int>& site) const {
    return std::hash<const void*>()(site.first) * 31 + static_cast<size_t>(site.second);
  }
};
std::unordered_map<PyObject*, bool> user_code;  // holds a reference to each code object
std::unordered_map<std::pair<PyObject*, int>, int, SiteHash> site_ids;
std::vector<std::string> site_names;

int site_of(PyObject* code, PyFrameObject* frame) {
#if PY_VERSION_HEX >= 0x030B0000
  const auto key = std::make_pair(code, PyFrame_GetLasti(frame));
#else  // Python 3.10 has no public bytecode offset: the line itself is the site
  const auto key = std::make_pair(code, PyFrame_GetLineNumber(frame));
#endif
  auto found = site_ids.find(key);
  if (found == site_ids.end()) {
    py::object filename = py::reinterpret_steal<py::object>(
        PyObject_GetAttrString(code, "co_filename"));
    site_names.push_back(
        callbacks->location(filename, PyFrame_GetLineNumber(frame)).cast<std::string>());
    found = site_ids.emplace(key, static_cast<int>(site_names.size() - 1)).first;
  }
  return found->second;
}

int user_sites(std::vector<int>& callers) {
  callers.clear();
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  Py_XINCREF(frame);
  int site = -1;
  while (frame != nullptr) {
    PyObject* code = reinterpret_cast<PyObject*>(PyFrame_GetCode(frame));  // new reference
    auto verdict = user_code.find(code);
    if (verdict == user_code.end()) {
      py::object filename = py::reinterpret_steal<py::object>(
          PyObject_GetAttrString(code, "co_filename"));
      Py_INCREF(code);  // kept: the table is keyed by its address
      verdict = user_code.emplace(code, callbacks->is_user_file(filename).cast<bool>()).first;
    }
    if (verdict->second) {
      const int found = site_of(code, frame);
      if (site < 0) {
        site = found;
      } else if (found != site &&
                 std::find(callers.begin(), callers.end(), found) == callers.end()) {
        callers.push_back(found);
      }
    }
    Py_DECREF(code);
    PyFrameObject* back = PyFrame_GetBack(frame);  // new reference
    Py_DECREF(frame);
    frame = back;
  }
  return site;
}

// Count one call of the op; refuse it when the matrix says it is unsupported.
void account(OpState& state) {
  if (in_graph || nested) return;
  if (state.status == kUnsupported) {
    py::gil_scoped_acquire gil;
    callbacks->refuse(state.name);  // raises: error_already_set reaches the caller
    throw std::logic_error("refuse callback returned");
  }
  if (state.count < location_samples) {  // the op's first calls: where the user made them
    py::gil_scoped_acquire gil;
    if (state.count == 0) callbacks->first_use(state.name);
    static std::vector<int> callers;  // GIL-guarded, reused
    const int site = user_sites(callers);
    if (site >= 0) ++state.site_counts[site];
    for (const int caller : callers) ++state.caller_counts[caller];
  }
  ++state.count;
}

void note_downcast(at::ScalarType logical) {
  if (in_graph) return;
  py::gil_scoped_acquire gil;
  callbacks->downcast(logical == at::kDouble ? "float64" : "complex128",
                      logical == at::kDouble ? "float32" : "complex64");
}

void check_memory_format(std::optional<at::MemoryFormat> format) {
  if (!format || *format == at::MemoryFormat::Contiguous ||
      *format == at::MemoryFormat::Preserve)
    return;
  py::gil_scoped_acquire gil;
  callbacks->memory_format(*format == at::MemoryFormat::ChannelsLast3d ? "torch.channels_last_3d"
                           : *format == at::MemoryFormat::ChannelsLast ? "torch.channels_last"
                                                                        : "an unknown format");
  throw std::logic_error("memory_format callback returned");
}

bool is_downcast(at::ScalarType t) {
  return downcast_float64 && (t == at::kDouble || t == at::kComplexDouble);
}
at::ScalarType narrow(at::ScalarType t) { return t == at::kDouble ? at::kFloat : at::kComplexFloat; }
at::ScalarType wider(at::ScalarType t) { return t == at::kFloat ? at::kDouble : at::kComplexDouble; }

// int64 runs as int32 (the matrix's rule): every int64 value the device writes is wrapped as
// an int32 would wrap it. Arithmetic modulo 2**32 on values already in int32 range gives what
// int32 kernels give, so computing in int64 and wrapping the result is computing in int32,
// while index tensors keep the int64 dtype the CPU kernels ask for. The evidence casts
// non-scalar tensors only: a 0-dim value keeps its 64 bits, unless it was computed from a
// non-scalar int64 tensor (`wide_inputs`: its op ran in 32 bits).
void wrap_int32(const at::Tensor& host, bool wide_inputs = false) {
  if (narrow_int64 && host.defined() && host.scalar_type() == at::kLong && host.numel() > 0 &&
      (host.dim() > 0 || wide_inputs))
    host.copy_(host.to(at::kInt));
}

// ---------------------------------------------------------------------------------------------
// Device tensors and their CPU aliases.

bool on_device(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
}

at::Tensor with_geometry(at::Tensor t, const at::Tensor& like) {
  t.unsafeGetTensorImpl()->set_sizes_and_strides(like.sizes(), like.strides(),
                                                 like.storage_offset());
  return t;
}

// A CPU tensor over `t`'s memory. Its storage may be resized by the CPU kernel (`out=` ops,
// `resize_`); `follow_alias` then moves the device tensor onto the new memory.
at::Tensor cpu_alias(const at::Tensor& t) {
  const auto& storage = t.storage();
  c10::Storage cpu(c10::Storage::use_byte_size_t(), storage.nbytes(),
                   c10::DataPtr(storage.mutable_data(), kHost), c10::GetCPUAllocator(), true);
  auto alias = at::detail::make_tensor<c10::TensorImpl>(
      std::move(cpu), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  return with_geometry(alias, t);
}

// A CPU tensor over `t`'s memory that keeps that memory alive: for c10d's ops, whose work may
// still read or write it after the op returns (an `isend` whose tensor the caller drops).
void release_storage(void* ctx) { delete static_cast<c10::Storage*>(ctx); }

at::Tensor owning_cpu_alias(const at::Tensor& t) {
  const auto& storage = t.storage();
  auto* keep = new c10::Storage(storage);
  c10::Storage cpu(c10::Storage::use_byte_size_t(), storage.nbytes(),
                   c10::DataPtr(storage.mutable_data(), keep, &release_storage, kHost),
                   c10::GetCPUAllocator(), true);
  auto alias = at::detail::make_tensor<c10::TensorImpl>(
      std::move(cpu), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  return with_geometry(alias, t);
}

// A device tensor over the memory of the CPU result `c`, which keeps it alive.
at::Tensor device_result(const at::Tensor& c) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), c.storage().nbytes(), adopt(c),
                       &host_allocator, true);
  return with_geometry(
      at::detail::make_tensor<c10::TensorImpl>(std::move(storage), kDeviceKeys, c.dtype()), c);
}

// A device tensor over `base`'s storage with the geometry of `c`, a view of base's memory.
at::Tensor device_view(const at::Tensor& base, const at::Tensor& c) {
  return with_geometry(at::detail::make_tensor<c10::TensorImpl>(c10::Storage(base.storage()),
                                                                kDeviceKeys, c.dtype()),
                       c);
}

// After a CPU kernel wrote through `alias`: if it gave the alias new memory (a resize) the
// device tensor adopts it; if it gave it a new geometry (a mis-shaped `out=`) the device tensor
// takes it too.
void follow_alias(const at::Tensor& device, const at::Tensor& alias) {
  auto* impl = device.unsafeGetTensorImpl();
  const auto& alias_storage = alias.storage();
  if (alias_storage.data() != device.storage().data() ||
      alias_storage.nbytes() != device.storage().nbytes()) {
    auto storage = device.storage();
    auto* storage_impl = storage.unsafeGetStorageImpl();
    storage_impl->set_data_ptr_noswap(adopt(alias));
    storage_impl->set_nbytes(alias_storage.nbytes());
  }
  if (device.sizes() != alias.sizes() || device.strides() != alias.strides() ||
      device.storage_offset() != alias.storage_offset())
    impl->set_sizes_and_strides(alias.sizes(), alias.strides(), alias.storage_offset());
}

void Hooks::resizePrivateUse1Bytes(const c10::Storage& storage, size_t newsize) const {
  auto* impl = storage.unsafeGetStorageImpl();
  auto fresh = host_allocator.allocate(newsize);
  const size_t keep = std::min<size_t>(newsize, impl->nbytes());
  if (keep) std::memcpy(fresh.get(), impl->data(), keep);
  impl->set_data_ptr_noswap(std::move(fresh));
  impl->set_nbytes(newsize);
}

// ---------------------------------------------------------------------------------------------
// The op kernel.

[[noreturn]] void mixing_error() {
  TORCH_CHECK(false,
              "Expected all tensors to be on the same device, but found at least two devices, ",
              active_device(), " and cpu!");
  throw std::logic_error("unreachable");
}

[[noreturn]] void cores_error(int a, int b) {
  TORCH_CHECK(false,
              "Expected all tensors to be on the same device, but found at least two devices, "
              "neuron:", a, " and neuron:", b, "!");
  throw std::logic_error("unreachable");
}

// `real_type`: the schema's own type (`type` says int for a ScalarType or MemoryFormat).
bool is_scalar_type_arg(const c10::Argument& arg) {
  auto type = arg.real_type();
  if (auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
  return type->kind() == c10::TypeKind::ScalarTypeType;
}

bool is_memory_format_arg(const c10::Argument& arg) {
  auto type = arg.real_type();
  if (auto optional = type->cast<c10::OptionalType>()) type = optional->getElementType();
  return type->kind() == c10::TypeKind::MemoryFormatType;
}

struct DeviceArgument {
  at::Tensor original;  // the device tensor
  at::Tensor alias;     // what the CPU kernel got: its alias, or a float32 copy of it
};

// Ops that only change metadata (views, `t_`, `unsqueeze_`): torch's CPU kernels for them are
// device-generic and touch no data, so they run on the device tensors themselves, as a real
// backend registers them. Torch's tracers call them on tensors without data too (FakeTensor,
// FunctionalTensor: they carry the Python key), which must not be counted or aliased.
void run_metadata_op(const c10::OperatorHandle& op, torch::jit::Stack* stack, OpState* state) {
  if (state) account(*state);
  struct Nesting {
    bool previous = nested;
    Nesting() { nested = true; }
    ~Nesting() { nested = previous; }
  } nesting;
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
}

bool touches_metadata_only(const c10::OperatorHandle& op) {
  const auto& returns = op.schema().returns();
  if (op.hasTag(at::Tag::inplace_view)) return true;
  if (returns.empty()) return false;
  for (const auto& ret : returns)
    if (!ret.alias_info() || ret.alias_info()->isWrite()) return false;
  return true;
}

bool any_traced(const c10::FunctionSchema& schema, const torch::jit::Stack& stack) {
  const size_t count = schema.arguments().size();
  for (size_t i = stack.size() - count; i < stack.size(); ++i) {
    const auto& value = stack[i];
    if (value.isTensor() && value.toTensor().key_set().has(c10::DispatchKey::Python)) return true;
  }
  return false;
}

void run_op(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  OpState& state = state_for(schema, &op);
  if (any_traced(schema, *stack)) return run_metadata_op(op, stack, nullptr);
  if (state.metadata_only) return run_metadata_op(op, stack, &state);
  account(state.by_dtype.empty() ? state : state_by_dtype(state, schema, *stack));

  const auto& arguments = schema.arguments();
  const size_t first = stack->size() - arguments.size();

  // Pass 1: which device this op targets, whether any device tensor computes narrower.
  // `narrowed`: a non-scalar float64 device tensor computes as float32 (0-dim ones keep their
  // 64 bits); `wide_int64`: a non-scalar int64 one computes as int32; `scalar_only`: every
  // tensor argument is 0-dim (and there is one), so a float64 asked for stays float64.
  bool any_device = false, narrowed = false, wide_int64 = false, any_tensor = false,
       scalar_only = true;
  std::optional<at::ScalarType> requested_dtype;  // a dtype argument, as the caller gave it
  std::optional<bool> device_target;  // an explicit device argument: neuron or not
  int core = -1, explicit_core = -1;  // the first device argument's core; a device argument's
  auto note_core = [&](const at::Tensor& t) {
    const int index = t.device().index();
    if (core < 0) core = index;
    else if (index != core && !state.cpu_tensor_ok) cores_error(core, index);
  };
  std::function<void(const c10::IValue&)> note_list = [&](const c10::IValue& value) {
    if (value.isTensorList()) {
      for (const at::Tensor& t : value.toTensorList()) {
        if (t.defined()) {
          any_tensor = true;
          scalar_only &= t.dim() == 0;
        }
        if (on_device(t)) {
          any_device = true;
          narrowed |= t.dim() > 0 && is_downcast(t.scalar_type());
          wide_int64 |= t.dim() > 0 && t.scalar_type() == at::kLong;
          note_core(t);
        }
      }
    } else if (value.isList()) {
      for (const c10::IValue& item : value.toList())
        if (item.isTensorList() || item.isList()) note_list(item);
    }
  };
  for (size_t i = 0; i < arguments.size(); ++i) {
    const auto& value = (*stack)[first + i];
    if (value.isTensor()) {
      const auto& t = value.toTensor();
      if (t.defined()) {
        any_tensor = true;
        scalar_only &= t.dim() == 0;
      }
      if (on_device(t)) {
        any_device = true;
        narrowed |= t.dim() > 0 && is_downcast(t.scalar_type());
        wide_int64 |= t.dim() > 0 && t.scalar_type() == at::kLong;
        note_core(t);
      }
    } else if (value.isTensorList() || value.isList()) {
      note_list(value);
    } else if (value.isDevice()) {
      device_target = value.toDevice().type() == c10::DeviceType::PrivateUse1;
      explicit_core = core_of(value.toDevice());
    } else if (value.isInt() && is_scalar_type_arg(arguments[i])) {
      requested_dtype = static_cast<at::ScalarType>(value.toInt());
    } else if (value.isInt() && is_memory_format_arg(arguments[i])) {
      check_memory_format(static_cast<at::MemoryFormat>(value.toInt()));
    }
  }
  // A float64 result computes as float32 and is handed back as float64: when float64 inputs
  // ran narrower and no other dtype was asked for, or when float64 was asked for (but for
  // 0-dim tensors only: a scalar keeps its 64 bits).
  scalar_only &= any_tensor;
  const bool widen =
      requested_dtype ? is_downcast(*requested_dtype) && !scalar_only : narrowed;
  const bool makes_device = device_target.value_or(any_device);
  const bool check_cpu = any_device && !state.cpu_tensor_ok && !in_graph;
  OpCore op_core_scope(explicit_core >= 0 ? explicit_core : core);

  // Pass 2: device tensors become CPU aliases, device arguments the host.
  std::vector<DeviceArgument> device_args;
  auto to_host = [&](const at::Tensor& t) -> at::Tensor {
    if (!on_device(t)) {
      if (check_cpu && t.defined() && t.dim() > 0) mixing_error();
      return t;
    }
    at::Tensor alias = state.asynchronous ? owning_cpu_alias(t) : cpu_alias(t);
    if (narrowed && is_downcast(t.scalar_type())) alias = alias.to(narrow(t.scalar_type()));
    device_args.push_back({t, alias});
    return alias;
  };
  // c10d's gathers take lists of tensor lists.
  std::function<c10::IValue(const c10::IValue&)> list_to_host = [&](const c10::IValue& value) {
    if (value.isTensorList()) {
      c10::List<at::Tensor> host;
      for (const at::Tensor& t : value.toTensorList()) host.push_back(to_host(t));
      return c10::IValue(host);
    }
    auto list = value.toList();
    c10::impl::GenericList host(list.elementType());
    for (const c10::IValue& item : list) host.push_back(list_to_host(item));
    return c10::IValue(host);
  };
  for (size_t i = 0; i < arguments.size(); ++i) {
    auto& value = (*stack)[first + i];
    if (value.isTensor()) {
      value = to_host(value.toTensor());
    } else if (value.isTensorList() ||
               (value.isList() && !value.toList().empty() && value.toList().get(0).isTensorList())) {
      value = list_to_host(value);
    } else if (value.isOptionalTensorList()) {
      c10::List<std::optional<at::Tensor>> host;
      for (const std::optional<at::Tensor>& t : value.toOptionalTensorList())
        host.push_back(t ? std::optional<at::Tensor>(to_host(*t)) : std::nullopt);
      value = c10::IValue(host);
    } else if (value.isDevice() && value.toDevice().type() == c10::DeviceType::PrivateUse1) {
      value = c10::IValue(kHost);
    } else if (value.isInt() && is_scalar_type_arg(arguments[i]) && !scalar_only &&
               is_downcast(static_cast<at::ScalarType>(value.toInt()))) {
      const auto logical = static_cast<at::ScalarType>(value.toInt());
      if (makes_device) note_downcast(logical);
      value = static_cast<int64_t>(narrow(logical));
    }
  }

  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);

  // Written arguments that computed narrower get their values back.
  for (auto& arg : device_args) {
    if (arg.alias.scalar_type() != arg.original.scalar_type() && schema.is_mutable()) {
      cpu_alias(arg.original).copy_(arg.alias);
    }
  }
  // Written int64 arguments wrap to int32 range (not a c10d op's: gloo may still be writing).
  if (narrow_int64 && schema.is_mutable() && !state.asynchronous)
    for (auto& arg : device_args) wrap_int32(arg.alias, wide_int64);

  // Results: a CPU tensor over an alias's memory is the device tensor's (the argument itself,
  // or a view of it); a new CPU tensor becomes a device tensor when the op makes device ones.
  const auto& returns = schema.returns();
  const size_t first_return = stack->size() - returns.size();
  auto to_device = [&](const at::Tensor& c, size_t position) -> at::Tensor {
    if (!c.defined() || !c.device().is_cpu()) return c;
    // The argument whose alias's memory this result is (a linear search: ops take few tensors,
    // and a map would cost an allocation per argument on every op).
    const auto* storage = c.storage().unsafeGetStorageImpl();
    auto found = std::find_if(device_args.begin(), device_args.end(), [&](const auto& arg) {
      return arg.alias.storage().unsafeGetStorageImpl() == storage;
    });
    if (found != device_args.end()) {
      auto& arg = *found;
      if (c.is_same(arg.alias)) {  // in place: the argument itself (a narrower copy was
        if (arg.alias.scalar_type() == arg.original.scalar_type())  // copied back above)
          follow_alias(arg.original, arg.alias);
        return arg.original;
      }
      if (arg.alias.scalar_type() == arg.original.scalar_type())
        return device_view(arg.original, c);
    }
    at::Tensor result = c;
    if (widen && (c.scalar_type() == at::kFloat || c.scalar_type() == at::kComplexFloat))
      result = c.to(wider(c.scalar_type()));
    if (!makes_device || (state.host_results >> position & 1)) return result;
    wrap_int32(result, wide_int64);
    // A non-scalar float64 computed in 64 bits (from 0-dim or host tensors: `torch.stack` of
    // scalars) holds what float32 holds.
    if (!narrowed && c.dim() > 0 && is_downcast(c.scalar_type()))
      result.copy_(result.to(narrow(c.scalar_type())));
    return device_result(result);
  };
  for (size_t r = 0; r < returns.size(); ++r) {
    auto& value = (*stack)[first_return + r];
    if (value.isTensor()) {
      value = to_device(value.toTensor(), r);
    } else if (value.isTensorList()) {
      c10::List<at::Tensor> out;
      for (const at::Tensor& c : value.toTensorList()) out.push_back(to_device(c, r));
      value = c10::IValue(out);
    }
  }
  // In-place ops on a list (`_foreach_add_`) return nothing: their aliases may still have
  // been resized, which the device tensors must follow.
  if (returns.empty())
    for (auto& arg : device_args)
      if (arg.alias.scalar_type() == arg.original.scalar_type())
        follow_alias(arg.original, arg.alias);
}

// ---------------------------------------------------------------------------------------------
// Kernels the fallback cannot be: where device memory is born, and where a tensor takes
// another's storage.

const c10::FunctionSchema& schema_of(const char* name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).schema();
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout>, std::optional<at::Device> device,
                               std::optional<bool>,
                               std::optional<at::MemoryFormat> memory_format) {
  static OpState& state = state_for(schema_of("aten::empty", "memory_format"));
  OpCore scope(core_of(device));
  account(state);
  check_memory_format(memory_format);
  const auto type = c10::dtype_or_default(dtype);
  if (is_downcast(type) && !size.empty()) note_downcast(type);  // a 0-dim one is not narrowed
  return at::detail::empty_generic(size, &host_allocator,
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), type,
                                   memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                         std::optional<at::Device> device, std::optional<bool>) {
  static OpState& state = state_for(schema_of("aten::empty_strided", ""));
  OpCore scope(core_of(device));
  account(state);
  const auto type = c10::dtype_or_default(dtype);
  if (is_downcast(type) && !size.empty()) note_downcast(type);
  return at::detail::empty_strided_generic(size, stride, &host_allocator,
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           type);
}

// Between devices, `copy_` calls `_copy_from`, which has no CPU kernel to redispatch to.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  static OpState& state = state_for(schema_of("aten::_copy_from", ""));
  account(state);
  at::Tensor target = on_device(dst) ? cpu_alias(dst) : dst;
  target.copy_(on_device(self) ? cpu_alias(self) : self, non_blocking);
  if (on_device(dst)) wrap_int32(target);
  return dst;
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  static OpState& state = state_for(schema_of("aten::set_", "source_Tensor"));
  account(state);
  TORCH_CHECK(on_device(source), "set_: expected a neuron tensor as the source");
  self.unsafeGetTensorImpl()->set_storage_keep_dtype(source.storage());
  self.unsafeGetTensorImpl()->set_sizes_and_strides(source.sizes(), source.strides(),
                                                    source.storage_offset());
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source, c10::SymInt offset,
                               c10::SymIntArrayRef size, c10::SymIntArrayRef stride) {
  static OpState& state = state_for(schema_of("aten::set_", "source_Storage_storage_offset"));
  account(state);
  TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1,
              "set_: expected a neuron storage");
  self.unsafeGetTensorImpl()->set_storage_keep_dtype(std::move(source));
  self.unsafeGetTensorImpl()->set_sizes_and_strides(
      c10::asIntArrayRefUnchecked(size), c10::asIntArrayRefUnchecked(stride),
      offset.expect_int());
  return self;
}

at::Tensor& set_source_storage_whole(at::Tensor& self, c10::Storage source) {
  static OpState& state = state_for(schema_of("aten::set_", "source_Storage"));
  account(state);
  TORCH_CHECK(source.device().type() == c10::DeviceType::PrivateUse1,
              "set_: expected a neuron storage");
  const int64_t numel = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  self.unsafeGetTensorImpl()->set_storage_keep_dtype(std::move(source));
  self.unsafeGetTensorImpl()->set_sizes_contiguous({numel});
  self.unsafeGetTensorImpl()->set_storage_offset(0);
  return self;
}

// One stream per core, and every op has finished when it returns: nothing to record.
void record_stream(at::Tensor&, c10::Stream) {
  static OpState& state = state_for(schema_of("aten::record_stream", ""));
  account(state);
}

const at::Tensor& resize(const at::Tensor& self, c10::SymIntArrayRef size,
                         std::optional<at::MemoryFormat> memory_format) {
  static OpState& state = state_for(schema_of("aten::resize_", ""));
  account(state);
  check_memory_format(memory_format);
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(c10::asIntArrayRefUnchecked(size));
  const size_t needed =
      (impl->storage_offset() + impl->numel()) * self.dtype().itemsize();
  if (impl->numel() && needed > self.storage().nbytes())
    at::detail::getPrivateUse1Hooks().resizePrivateUse1Bytes(self.storage(), needed);
  return self;
}

// ---------------------------------------------------------------------------------------------
// Python interface.

std::vector<std::unique_ptr<torch::Library>> libraries;

void install(py::object describe, py::object first_use, py::object is_user_file,
             py::object location, py::object refuse, py::object downcast,
             py::object memory_format, int64_t samples, bool float64_as_float32,
             bool int64_as_int32, const std::vector<std::string>& whole_ops) {
  TORCH_CHECK(callbacks == nullptr, "the native neuron engine is installed already");
  callbacks = new Callbacks{describe, first_use, is_user_file, location,
                            refuse,   downcast,  memory_format};
  location_samples = samples;
  downcast_float64 = float64_as_float32;
  narrow_int64 = int64_as_int32;
  at::RegisterPrivateUse1HooksInterface(new Hooks());

  auto fallback = std::make_unique<torch::Library>(torch::Library::IMPL, "_",
                                                   c10::DispatchKey::PrivateUse1, __FILE__,
                                                   __LINE__);
  fallback->fallback(torch::CppFunction::makeFromBoxedFunction<&run_op>());
  auto aten = std::make_unique<torch::Library>(torch::Library::IMPL, "aten",
                                               c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  aten->impl("empty.memory_format", TORCH_FN(empty_memory_format));
  aten->impl("empty_strided", TORCH_FN(empty_strided));
  aten->impl("_copy_from", TORCH_FN(copy_from));
  aten->impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
  aten->impl("set_.source_Storage_storage_offset", TORCH_FN(set_source_storage));
  aten->impl("set_.source_Storage", TORCH_FN(set_source_storage_whole));
  aten->impl("resize_", TORCH_FN(resize));
  aten->impl("record_stream", TORCH_FN(record_stream));
  libraries.push_back(std::move(fallback));
  libraries.push_back(std::move(aten));
  // Ops that would not reach the fallback reach `run_op` whole: those torch would decompose for
  // a backend (CompositeExplicitAutograd kernels), as the matrix names them and the Python
  // engine saw them, and c10d's collectives, whose own PrivateUse1 kernels would hand device
  // tensors to gloo.
  struct Silent final : c10::WarningHandler {
    void process(const c10::Warning&) override {}
  } silent;
  // Replacing c10d's own PrivateUse1 kernels is meant; torch would warn about it on stderr.
  c10::WarningUtils::WarningHandlerGuard quiet(&silent);
  std::unordered_map<std::string, torch::Library*> by_namespace;
  for (const auto& full_name : whole_ops) {
    const auto split = full_name.find("::");
    const std::string ns = full_name.substr(0, split);
    auto& library = by_namespace[ns];
    if (!library) {
      libraries.push_back(std::make_unique<torch::Library>(
          torch::Library::IMPL, ns, c10::DispatchKey::PrivateUse1, __FILE__, __LINE__));
      library = libraries.back().get();
    }
    library->impl(full_name.substr(split + 2).c_str(),
                  torch::CppFunction::makeFromBoxedFunction<&run_op>());
  }
}

py::dict named_sites(const std::unordered_map<int, int64_t>& counts) {
  py::dict named;
  for (const auto& site : counts) named[py::str(site_names[site.first])] = site.second;
  return named;
}

// name -> (calls, {"file:line": calls there}, {"file:line" that called into those: calls}),
// for the sampled calls
py::dict op_counts() {
  py::dict counts;
  std::lock_guard<std::mutex> lock(states_mutex);
  auto add = [&](const OpState& state) {
    if (!state.count) return;
    counts[py::str(state.name)] = py::make_tuple(state.count, named_sites(state.site_counts),
                                                 named_sites(state.caller_counts));
  };
  for (const auto& entry : states) add(*entry.second);
  for (const auto& state : dtype_states) add(*state);
  return counts;
}

void reset_counts() {
  std::lock_guard<std::mutex> lock(states_mutex);
  auto reset = [](OpState& state) {
    state.count = 0;
    state.site_counts.clear();
    state.caller_counts.clear();
  };
  for (auto& entry : states) reset(*entry.second);
  for (auto& state : dtype_states) reset(*state);
}

bool set_in_graph(bool value) {
  const bool previous = in_graph;
  in_graph = value;
  return previous;
}

py::dict memory_stats() {
  py::dict stats;
  stats["allocated"] = ledger.allocated.load();
  stats["peak"] = ledger.peak.load();
  stats["allocations"] = ledger.allocations.load();
  stats["frees"] = ledger.frees.load();
  stats["live"] = ledger.live.load();
  return stats;
}

void reset_peak() { ledger.peak = ledger.allocated.load(); }
void reset_accumulated() { ledger.allocations = 0; ledger.frees = 0; }

// The CPU tensor over a device tensor's memory (for collectives and tests).
at::Tensor host_view(const at::Tensor& t) {
  TORCH_CHECK(on_device(t), "host_view: expected a neuron tensor");
  return cpu_alias(t);
}

// An accepted compiled graph runs on CPU tensors over its device inputs' memory, without an
// op kernel call per op (`graph_inputs`), and its results come back as device tensors over the
// same memory (`graph_outputs`): an input itself, a view of an input, or a new tensor where the
// traced graph made one on the device (`on_device`, from the graph's output metadata).
py::list graph_inputs(const py::list& args) {
  py::list host;
  for (const auto& arg : args) {
    if (THPVariable_Check(arg.ptr())) {
      const auto& t = THPVariable_Unpack(arg.ptr());
      if (on_device(t)) {
        host.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(cpu_alias(t))));
        continue;
      }
    }
    host.append(arg);
  }
  return host;
}

py::list graph_outputs(const py::sequence& outputs, const py::list& args, const py::list& host,
                       const std::vector<bool>& on_device_outputs) {
  std::unordered_map<const c10::StorageImpl*, size_t> alias_of;
  int core = -1;
  for (size_t i = 0; i < host.size(); ++i)
    if (THPVariable_Check(host[i].ptr()) && THPVariable_Check(args[i].ptr()) &&
        on_device(THPVariable_Unpack(args[i].ptr()))) {
      alias_of[THPVariable_Unpack(host[i].ptr()).storage().unsafeGetStorageImpl()] = i;
      if (core < 0) core = THPVariable_Unpack(args[i].ptr()).device().index();
    }
  OpCore scope(core);
  py::list results;
  for (size_t k = 0; k < outputs.size(); ++k) {
    py::object out = outputs[k];
    if (!THPVariable_Check(out.ptr())) {
      results.append(out);
      continue;
    }
    const auto& c = THPVariable_Unpack(out.ptr());
    auto found = c.defined() ? alias_of.find(c.storage().unsafeGetStorageImpl()) : alias_of.end();
    if (found != alias_of.end()) {
      const auto& original = THPVariable_Unpack(args[found->second].ptr());
      if (c.is_same(THPVariable_Unpack(host[found->second].ptr())))
        results.append(args[found->second]);
      else
        results.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(device_view(original, c))));
    } else if (k < on_device_outputs.size() && on_device_outputs[k] && c.defined() &&
               c.device().is_cpu()) {
      wrap_int32(c);  // int64 a graph makes leaves it in int32 range (inside it, it is not)
      results.append(py::reinterpret_steal<py::object>(THPVariable_Wrap(device_result(c))));
    } else {
      results.append(out);
    }
  }
  return results;
}

void set_visible_cores(int count) { visible_cores = count; }
int get_current_core() { return current_core.load(); }
void set_current_core(int index) {
  check_device_index(c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(index)));
  current_core = index;
}

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &host_allocator);

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("set_visible_cores", &set_visible_cores);
  m.def("current_core", &get_current_core);
  m.def("set_current_core", &set_current_core);
  m.def("install", &install);
  m.def("op_counts", &op_counts);
  m.def("reset_counts", &reset_counts);
  m.def("set_in_graph", &set_in_graph);
  m.def("memory_stats", &memory_stats);
  m.def("reset_peak", &reset_peak);
  m.def("reset_accumulated", &reset_accumulated);
  m.def("host_view", &host_view);
  m.def("graph_inputs", &graph_inputs);
  m.def("graph_outputs", &graph_outputs);
}
