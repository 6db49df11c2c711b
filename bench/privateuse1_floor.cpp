// What a C++ PrivateUse1 backend costs per op: the floor under the simulated device's design.
//
// A measurement for bench/privateuse1_floor.py, not the runtime. Tensors of the PrivateUse1
// device are host memory from their own allocator; every op but the two factories and
// `_copy_from` reaches one boxed fallback, which points a CPU tensor at the memory of each
// device argument (no copy), redispatches the op to the CPU kernels, and hands the results back
// as device tensors over the same memory: in-place results as the argument itself, views over
// the argument's storage, new results owning the CPU result. Each op is counted in a hash map,
// as a runtime that records ops would at least do. What the runtime also does per op (the
// matrix's status, the user's source line, float64 run as float32, the memory ledger) is not
// here; the script says so.

#include <torch/extension.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/core/impl/alloc_cpu.h>

#include <cstring>
#include <unordered_map>

namespace {

const c10::Device kDevice(c10::DeviceType::PrivateUse1, 0);
const c10::DispatchKeySet kDeviceKeys({c10::DispatchKey::PrivateUse1,
                                       c10::DispatchKey::AutogradPrivateUse1,
                                       c10::DispatchKey::ADInplaceOrView});

void free_host(void* ctx) { c10::free_cpu(ctx); }

struct HostAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) override {
    void* p = n ? c10::alloc_cpu(n) : nullptr;
    return {p, p, &free_host, kDevice};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &free_host; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};
HostAllocator host_allocator;

struct GuardImpl final : c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return c10::DeviceType::PrivateUse1; }
  c10::Device exchangeDevice(c10::Device d) const override { return d; }
  c10::Device getDevice() const override { return kDevice; }
  void setDevice(c10::Device) const override {}
  void uncheckedSetDevice(c10::Device) const noexcept override {}
  c10::Stream getStream(c10::Device d) const noexcept override {
    return c10::Stream(c10::Stream::DEFAULT, d);
  }
  c10::Stream exchangeStream(c10::Stream s) const noexcept override { return s; }
  c10::DeviceIndex deviceCount() const noexcept override { return 1; }
};

struct Hooks final : at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return true; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override { return 1; }
  at::Device getDeviceFromPtr(void*) const override { return kDevice; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex) const override {
    return at::detail::getDefaultCPUGenerator();
  }
};

std::unordered_map<const c10::FunctionSchema*, int64_t> op_counts;

bool on_device(const at::Tensor& t) {
  return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
}

// A CPU tensor over `t`'s memory.
at::Tensor cpu_alias(const at::Tensor& t) {
  const auto& storage = t.storage();
  c10::Storage cpu(c10::Storage::use_byte_size_t(), storage.nbytes(),
                   c10::DataPtr(storage.mutable_data(), c10::Device(c10::DeviceType::CPU)),
                   nullptr, false);
  auto alias = at::detail::make_tensor<c10::TensorImpl>(
      std::move(cpu), c10::DispatchKeySet(c10::DispatchKey::CPU), t.dtype());
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(t.sizes(), t.strides(), t.storage_offset());
  return alias;
}

// A device tensor over the memory of the CPU result `c`, which its storage keeps alive.
at::Tensor device_result(const at::Tensor& c) {
  auto* owner = new at::Tensor(c);
  c10::Storage storage(
      c10::Storage::use_byte_size_t(), c.storage().nbytes(),
      c10::DataPtr(c.storage().mutable_data(), owner,
                   [](void* ctx) { delete static_cast<at::Tensor*>(ctx); }, kDevice),
      nullptr, false);
  auto t = at::detail::make_tensor<c10::TensorImpl>(std::move(storage), kDeviceKeys, c.dtype());
  t.unsafeGetTensorImpl()->set_sizes_and_strides(c.sizes(), c.strides(), c.storage_offset());
  return t;
}

// A device tensor over `base`'s storage with the geometry of `c`, a view of base's memory.
at::Tensor device_view(const at::Tensor& base, const at::Tensor& c) {
  auto t = at::detail::make_tensor<c10::TensorImpl>(c10::Storage(base.storage()), kDeviceKeys,
                                                    c.dtype());
  t.unsafeGetTensorImpl()->set_sizes_and_strides(c.sizes(), c.strides(), c.storage_offset());
  return t;
}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& schema = op.schema();
  ++op_counts[&schema];
  const auto& arguments = schema.arguments();
  const size_t first = stack->size() - arguments.size();
  std::vector<at::Tensor> originals(arguments.size());  // the device arguments
  bool any_device = false;
  for (size_t i = 0; i < arguments.size(); ++i) {
    auto& value = (*stack)[first + i];
    if (value.isTensor()) {
      const auto& t = value.toTensor();
      if (on_device(t)) {
        originals[i] = t;
        value = cpu_alias(t);
        any_device = true;
      }
    } else if (value.isTensorList()) {  // `_foreach_*` ops: written through the aliases
      std::vector<at::Tensor> cpu;
      for (const at::Tensor& t : value.toTensorList()) {
        any_device |= on_device(t);
        cpu.push_back(on_device(t) ? cpu_alias(t) : t);
      }
      value = c10::IValue(c10::List<at::Tensor>(cpu));
    }
  }
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
  const auto& returns = schema.returns();
  const size_t first_return = stack->size() - returns.size();
  for (size_t r = 0; r < returns.size(); ++r) {
    auto& value = (*stack)[first_return + r];
    if (value.isTensor()) {
      const auto& c = value.toTensor();
      if (!c.defined() || !c.device().is_cpu()) continue;
      const auto* alias = returns[r].alias_info();
      bool handed = false;
      for (size_t i = 0; alias && i < arguments.size(); ++i) {
        const auto* arg_alias = arguments[i].alias_info();
        if (arg_alias && originals[i].defined() && arg_alias->beforeSets() == alias->beforeSets()) {
          value = alias->isWrite() ? originals[i] : device_view(originals[i], c);
          handed = true;
          break;
        }
      }
      if (!handed && any_device) value = device_result(c);
    } else if (value.isTensorList() && any_device) {
      std::vector<at::Tensor> out;
      for (const at::Tensor& c : value.toTensorList())
        out.push_back(c.defined() && c.device().is_cpu() ? device_result(c) : c);
      value = c10::IValue(c10::List<at::Tensor>(out));
    }
  }
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout>, std::optional<at::Device>,
                               std::optional<bool>,
                               std::optional<at::MemoryFormat> memory_format) {
  return at::detail::empty_generic(size, &host_allocator,
                                   c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                   c10::dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout>,
                         std::optional<at::Device>, std::optional<bool>) {
  return at::detail::empty_strided_generic(size, stride, &host_allocator,
                                           c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
                                           c10::dtype_or_default(dtype));
}

// Between devices, `copy_` calls `_copy_from`, which has no CPU kernel to redispatch to.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool non_blocking) {
  at::Tensor source = on_device(self) ? cpu_alias(self) : self;
  at::Tensor target = on_device(dst) ? cpu_alias(dst) : dst;
  target.copy_(source, non_blocking);
  return dst;
}

int64_t ops_run() {
  int64_t total = 0;
  for (const auto& entry : op_counts) total += entry.second;
  return total;
}

const bool hooks_registered = [] {
  at::RegisterPrivateUse1HooksInterface(new Hooks());
  return true;
}();

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, GuardImpl);
REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &host_allocator);

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>());
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("_copy_from", copy_from);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("ops_run", &ops_run); }
