-- An op lives in five places, and this spec checks that they agree, as sets of exact names:
--   1. the core's registry: the op's definition in core/ops/<family>.c (and its declaration in
--      core/include/fastnn.h, without which the Lua binding cannot call it);
--   2. each backend's kernel rows, for the families on rows (fnn_row_family_at): the CPU's beside
--      the entry points, cuda/<family>.cu's (in a CUDA or emulated build, spec/gpu/emulate.sh);
--   3. the Lua binding: fnn.<name> or Tensor:<name> (a few ops are reached through an operator or
--      an option, listed below with the function that binds them);
--   4. the case table spec/cases/<family>.lua, which drives the gradient check (gradcheck_spec),
--      the values against a naive reference (below, for cases with `ref`) and, for the families on
--      rows, the CUDA parity (cuda_parity_spec).
-- Leaving out any one place fails a test here by the op's name.
local ffi = require 'ffi'
local fnn = require 'fastnn'
local C = require 'fastnn.C'

local CPU, CUDA = C.FNN_DEVICE_CPU, C.FNN_DEVICE_CUDA

-- ops whose binding is not fnn.<name> / Tensor:<name>: the registry name and the Lua function that calls it
local BOUND_AS = {
   add_scalar = 'mt.__add', mul_scalar = 'mt.__mul', rsub_scalar = 'mt.__sub', rdiv_scalar = 'mt.__div',
   pow_scalar = 'Tensor.pow', rpow_scalar = 'mt.__pow', gelu_tanh = 'fnn.gelu', pad_mode = 'Tensor.pad',
   upsample_nearest = 'fnn.upsample', upsample_bilinear2d = 'fnn.upsample', to_dtype = 'Tensor.bf16',
}
local holders = {fnn = fnn, Tensor = fnn.Tensor, mt = require('fastnn.tensor').mt}

local function registry()
   local by_name, families = {}, {}
   for _, op in ipairs(fnn.ops()) do
      assert.is_nil(by_name[op.name], 'the registry names ' .. op.name .. ' twice')
      by_name[op.name] = op
      families[op.family] = true
   end
   return by_name, families
end

local function cases_of(family)
   local ok, cases = pcall(require, 'cases.' .. family)
   return ok and cases or {}
end

local function row_families()
   local list, i = {}, 0
   while true do
      local f = C.fnn_row_family_at(i)
      if f == nil then return list end
      list[#list + 1] = ffi.string(f)
      i = i + 1
   end
end

-- the op names of a backend's rows for family, as a list (nil when that backend has no table)
local function rows(device_type, family)
   local list, i = {}, 0
   while true do
      local name = C.fnn_kernel_at(device_type, family, i)
      if name == nil then return i > 0 and list or nil end
      list[#list + 1] = ffi.string(name)
      i = i + 1
   end
end

local function sorted(set)
   local list = {}
   for k in pairs(set) do list[#list + 1] = k end
   table.sort(list)
   return list
end

describe('the five places of an op', function()
   local by_name, families = registry()

   it('every registered op has a case in spec/cases/<its family>.lua', function()
      local missing = {}
      for name, op in pairs(by_name) do
         local found = false
         for _, case in ipairs(cases_of(op.family)) do found = found or case.op == name end
         if not found then missing[#missing + 1] = op.family .. '.' .. name end
      end
      table.sort(missing)
      assert.same({}, missing)
   end)

   it('every case names a registered op of its file\'s family', function()
      local stray = {}
      for family in pairs(families) do
         for i, case in ipairs(cases_of(family)) do
            local op = by_name[case.op]
            if not op or op.family ~= family then
               stray[#stray + 1] = ('spec/cases/%s.lua case %d names %s'):format(family, i, tostring(case.op))
            end
         end
      end
      assert.same({}, stray)
   end)

   -- the case table is the whole test of an op: each case's values are checked against a naive loop
   -- (the describe at the end), so a case without one is a hole
   it('every case carries a naive ref', function()
      local missing = {}
      for family in pairs(families) do
         for i, case in ipairs(cases_of(family)) do
            if type(case.ref) ~= 'function' then
               missing[#missing + 1] = ('spec/cases/%s.lua case %d (%s)'):format(family, i, tostring(case.op))
            end
         end
      end
      table.sort(missing)
      assert.same({}, missing)
   end)

   -- fnn.<name> itself, not only x:<name>(): fastnn's init exports an op bound only as a method, and
   -- this holds it to that
   it('every registered op has a Lua binding by its name, as fnn.<name>', function()
      local missing = {}
      for name in pairs(by_name) do
         local via = BOUND_AS[name]
         local bound
         if via then
            local holder, key = via:match('^(%w+)%.([%w_]+)$')
            bound = holders[holder][key]
         else
            bound = fnn[name]
         end
         if type(bound) ~= 'function' then missing[#missing + 1] = name end
      end
      table.sort(missing)
      assert.same({}, missing)
      for name in pairs(BOUND_AS) do assert.is_truthy(by_name[name], 'BOUND_AS names unknown op ' .. name) end
   end)

   it('some families are on kernel rows, each a family of the registry', function()
      local list = row_families()
      assert.is_true(#list >= 1)
      for _, f in ipairs(list) do assert.is_true(families[f] == true, f) end
   end)

   for _, family in ipairs(row_families()) do
      it(family .. ': the CPU rows name ops of the family, once each, and each runs', function()
         local seen, first_case = {}, {}
         for _, c in ipairs(cases_of(family)) do first_case[c.op] = first_case[c.op] or c end
         for _, name in ipairs(rows(CPU, family) or {}) do
            assert.is_nil(seen[name], 'the CPU rows name ' .. name .. ' twice')
            seen[name] = true
            assert.is_truthy(by_name[name], 'a CPU row for unregistered op ' .. name)
            assert.equals(family, by_name[name].family)
            -- its first case through the op's binding: the row is reached and gives finite CPU tensors
            local c = first_case[name]
            assert.is_truthy(c, name .. ': a CPU row without a case')
            local out = {c.fn(c.inputs())}
            assert.is_true(#out > 0, name .. ': its case returned nothing')
            for _, t in ipairs(out) do
               if fnn.is_tensor(t) then
                  assert.equals('cpu', tostring(t:device()), name .. ': a result off the CPU')
                  if t:dtype() == 'float32' and t:numel() > 0 then
                     local s = t:abs():sum():item()
                     assert.is_true(s == s and s < math.huge, name .. ': a non-finite result from its case')
                  end
               end
            end
         end
      end)

      it(family .. ': the CUDA rows are exactly the family\'s ops, and has_cuda says so', function()
         local cuda = rows(CUDA, family)
         if C.fnn_cuda_built() == 0 then
            -- no CUDA backend in this build: no rows, and no op claims one
            assert.is_nil(cuda)
            for _, op in pairs(by_name) do
               if op.family == family then assert.is_false(op.has_cuda, op.name) end
            end
            return
         end
         assert.is_table(cuda, 'a CUDA build without ' .. family .. ' rows')
         local want, got = {}, {}
         for name, op in pairs(by_name) do if op.family == family then want[name] = true end end
         for _, name in ipairs(cuda) do
            assert.is_nil(got[name], 'the CUDA rows name ' .. name .. ' twice')
            got[name] = true
            assert.is_true(by_name[name] and by_name[name].has_cuda, name .. ': has_cuda disagrees with the rows')
         end
         assert.same(sorted(want), sorted(got))
      end)
   end
end)

-- The kernel families (core/internal.h's FNN_KERNEL_TABLE: rows named by kernel or rule, not by registry
-- op, so fnn_row_family_at leaves them out): the CPU has every row, and a CUDA (or emulated) build the
-- same rows, so no op or optimizer step refuses on a GPU for want of one.
describe('the kernel families', function()
   local KERNEL_FAMILIES = {
      elementwise = {'map'},
      int64 = {'binary', 'cast', 'max', 'min', 'sum'},
      optim = {'adadelta', 'adagrad', 'adam', 'decay', 'lerp', 'lion', 'radam', 'rmsprop', 'sgd'},
   }
   for family, want in pairs(KERNEL_FAMILIES) do
      it(family .. ': the CPU rows, and a CUDA build\'s, are exactly its kernels', function()
         local cpu = rows(CPU, family)
         assert.is_table(cpu, 'the CPU has no ' .. family .. ' rows')
         table.sort(cpu)
         assert.same(want, cpu)
         for _, f in ipairs(row_families()) do assert.is_true(f ~= family, family .. ' listed as a registry family') end
         local cuda = rows(CUDA, family)
         if C.fnn_cuda_built() == 0 then assert.is_nil(cuda) return end
         assert.is_table(cuda, 'a CUDA build without ' .. family .. ' rows')
         table.sort(cuda)
         assert.same(want, cuda)
      end)
   end
end)

-- each case with a `ref` (a naive loop over plain Lua numbers) gives the op's values
describe('case values against their naive references', function()
   for family in pairs(select(2, registry())) do
      for i, case in ipairs(cases_of(family)) do
         if case.ref then
            it(('%s.%s case %d'):format(family, case.op, i), function()
               if case.requires == 'cuda' and not fnn.Device.cuda(0) then
                  -- no GPU here: the case cannot run, so check the reason given instead
                  local dev, why = fnn.Device.cuda(0)
                  assert.is_nil(dev)
                  assert.matches('cuda:0 is not available', why)
                  return
               end
               for _, n in ipairs(case.sizes or {false}) do
                  fnn.manual_seed(300 + i)
                  local inputs = {case.inputs(n or nil)}
                  local got, want = case.fn(unpack(inputs)), case.ref(unpack(inputs))
                  local at = n and (' size %d'):format(n) or ''
                  assert.same(want:shape(), got:shape(), case.op .. at)
                  local g, w = got:to_flat(), want:to_flat()
                  local tol = case.value_tol or 1e-5
                  for k = 1, #w do
                     -- nan must meet nan, an infinity the same infinity (cases at nan and inf: the
                     -- relative tolerance of an infinite want would pass anything)
                     assert((g[k] ~= g[k] and w[k] ~= w[k]) or g[k] == w[k] or
                            (math.abs(w[k]) < math.huge and math.abs(g[k] - w[k]) <= tol * (1 + math.abs(w[k]))),
                            ('%s case %d%s element %d: got %.9g, want %.9g'):format(case.op, i, at, k, g[k], w[k]))
                  end
               end
            end)
         end
      end
   end
end)
