-- safetensors exchange: files written by the reference implementation (the `safetensors` Python
-- package, with numpy) load here with F32, F16, BF16, I64 (and F64, I32) tensors; files written
-- here are read back by the package and checked value by value; F16/BF16 narrowing rounds to
-- nearest even, checked against a reference written in this spec.
local fnn = require 'fastnn'
local ffi = require 'ffi'
local C = require 'fastnn.C'
local nn = fnn.nn
local serialize = require 'fastnn.serialize'

local dir = io.popen('mktemp -d /tmp/fastnn-st-XXXXXX'):read('*l')
local function file(name) return dir .. '/' .. name end
teardown(function() os.execute('rm -rf ' .. dir) end)

local write_file = require('spec.process').write_file

-- run a Python script (the reference implementation); returns its output, failing on a bad exit
local function python(script, ...)
   local path = file('script.py')
   write_file(path, script)
   local args = {}
   for i, a in ipairs{...} do args[i] = "'" .. a .. "'" end
   local p = io.popen('python3 ' .. path .. ' ' .. table.concat(args, ' ') .. ' 2>&1; echo "exit=$?"')
   local out = p:read('*a')
   p:close()
   local body, rc = out:match('^(.-)exit=(%d+)%s*$')
   assert(rc == '0', 'python3 failed (the specs need numpy and safetensors from PyPI):\n' .. out)
   return body
end

-- the exact int64 values of t (to_flat is exact only up to 2^53)
local function int64s(t)
   local n = t:numel()
   local buf = ffi.new('int64_t[?]', math.max(n, 1))
   assert(C.fnn_copy_to_int64(t, buf, n) == 0)
   local out = {}
   for i = 0, n - 1 do out[i + 1] = tostring(buf[i]):gsub('LL$', '') end
   return out
end

local function int64_tensor(values, shape)
   local buf = ffi.new('int64_t[?]', #values)
   for i, v in ipairs(values) do buf[i - 1] = v end
   local sh = ffi.new('int64_t[?]', #shape, shape)
   local fnn_tensor = require 'fastnn.tensor'
   local out = fnn_tensor.new()
   assert(C.fnn_tensor_from_int64(out, #shape, sh, buf) == 0)
   return fnn_tensor.done(out)
end

-- nearest-even rounding of x to a binary float with `mant` stored mantissa bits, smallest
-- normal exponent `emin` and largest finite value `max` (the naive reference, in doubles)
local function round_to(x, mant, emin, max)
   if x ~= x then return x end
   local sign = (x < 0 or 1 / x < 0) and -1 or 1
   local a = math.abs(x)
   if a == math.huge then return sign * a end
   local halfway = max + 2 ^ (math.floor(math.log(max) / math.log(2)) - mant - 1)
   if a >= halfway then return sign * math.huge end
   if a == 0 then return sign * 0 end
   local _, ex = math.frexp(a)             -- a = m 2^ex, m in [0.5, 1)
   local e = math.max(ex - 1, emin)
   local ulp = 2 ^ (e - mant)
   local q = a / ulp
   local r = math.floor(q)
   local frac = q - r
   if frac > 0.5 or (frac == 0.5 and r % 2 == 1) then r = r + 1 end
   return sign * r * ulp
end
local function round_f16(x) return round_to(x, 10, -14, 65504) end
local function round_bf16(x) return round_to(x, 7, -126, (2 - 2 ^ -7) * 2 ^ 127) end

local function same_value(e, g, what)
   if e ~= e then
      assert(g ~= g, ('%s: expected nan, got %.9g'):format(what, g))
   else
      assert(e == g and (e ~= 0 or (1 / e) == (1 / g)), ('%s: expected %.9g, got %.9g'):format(what, e, g))
   end
end

-- values that probe the rounding: ties either way, the edges of subnormals and of overflow
local tricky = {0, -0.0, 1, -1, 1 + 2 ^ -11, 1 + 3 * 2 ^ -11, 1 + 2 ^ -8, 1 + 3 * 2 ^ -8, 65504, 65519, 65520, 70000,
                2 ^ -14, 2 ^ -24, 2 ^ -25, 1.5 * 2 ^ -25, 3 * 2 ^ -26, 1e-8, 1 / 3, -2 / 3, 3.1415926, 1e30, -1e38,
                3.3895314e38, 3.4e38, 1e-39, math.huge, -math.huge, 0 / 0, 123.456, -0.0001}

describe('files from the safetensors package', function()
   it('load with F32, F16, BF16, I64, F64 and I32 tensors, values widened exactly', function()
      local out = python([==[
import sys, numpy as np
from safetensors.numpy import save_file
import safetensors
path = sys.argv[1]
f32 = np.array([[0.5, -1.25, 3.0e-3], [1e20, -0.0, 7.0]], dtype=np.float32)
f16 = np.array([1.0, -2.5, 65504.0, 6.103515625e-05, 5.960464477539063e-08, 0.333251953125, -0.0], dtype=np.float16)
i64 = np.array([[1, -2], [2**62 + 1, -(2**63)]], dtype=np.int64)
f64 = np.array([0.1, -1e300, 2.5], dtype=np.float64)
i32 = np.array([7, -2147483648], dtype=np.int32)
save_file({"f32": f32, "f16": f16, "i64": i64, "f64": f64, "i32": i32}, path + "/numpy.safetensors",
          metadata={"source": "python"})
# bfloat16: numpy has no such dtype; the raw bits go through the package's own serializer
bf = np.array([1.0, -3.5, 0.0078125, 3.3895313892515355e38, -1.5 * 2**-33], dtype=np.float32)
bits = (bf.view(np.uint32) >> 16).astype(np.uint16)     # exact: each value has 8 significant bits
assert ((bits.astype(np.uint32) << 16).view(np.float32) == bf).all()
try:
    spec = {"bf": safetensors.TensorSpec(dtype="bfloat16", shape=list(bits.shape), data_ptr=bits.ctypes.data,
                                         data_len=bits.nbytes)}
except AttributeError:
    spec = {"bf": {"dtype": "bfloat16", "shape": list(bits.shape), "data": bits.tobytes()}}
data = safetensors.serialize(spec, metadata=None)
open(path + "/bf16.safetensors", "wb").write(bytes(data))
for v in f16.astype(np.float64): print(repr(float(v)))
]==], dir)
      local f16_expected = {}
      for line in out:gmatch('[^\n]+') do f16_expected[#f16_expected + 1] = tonumber(line) end
      assert.equals(7, #f16_expected)

      local t, meta = fnn.load_safetensors(file('numpy.safetensors'))
      assert.equals('python', meta.source)
      assert.same({2, 3}, t.f32:shape())
      assert.equals('float32', t.f32:dtype())
      local f32 = {0.5, -1.25, 3.0e-3, 1e20, -0.0, 7.0}
      for i, v in ipairs(t.f32:to_flat()) do same_value(tonumber(ffi.new('float', f32[i])), v, 'f32 ' .. i) end
      assert.equals('float32', t.f16:dtype())
      for i, v in ipairs(t.f16:to_flat()) do same_value(f16_expected[i], v, 'f16 ' .. i) end
      assert.equals('int64', t.i64:dtype())
      assert.same({'1', '-2', '4611686018427387905', '-9223372036854775808'}, int64s(t.i64))
      assert.equals('int64', t.i32:dtype())
      assert.same({'7', '-2147483648'}, int64s(t.i32))
      local f64 = {0.1, -math.huge, 2.5}                -- -1e300 does not fit in float32
      for i, v in ipairs(t.f64:to_flat()) do same_value(tonumber(ffi.new('float', f64[i])), v, 'f64 ' .. i) end

      local info = serialize.info(file('numpy.safetensors'))
      assert.is_false(info.checksummed)
      local dtypes = {}
      for _, e in ipairs(info.tensors) do dtypes[e.name] = e.dtype end
      assert.same({f32 = 'F32', f16 = 'F16', i64 = 'I64', f64 = 'F64', i32 = 'I32'}, dtypes)

      local b = fnn.load_safetensors(file('bf16.safetensors'))
      local bf = {1.0, -3.5, 0.0078125, 3.3895313892515355e38, -1.5 * 2 ^ -33}
      for i, v in ipairs(b.bf:to_flat()) do same_value(tonumber(ffi.new('float', bf[i])), v, 'bf16 ' .. i) end
      assert.equals('BF16', serialize.info(file('bf16.safetensors')).tensors[1].dtype)
   end)

   it('load into a model by name, widening F16 weights', function()
      python([==[
import sys, numpy as np
from safetensors.numpy import save_file
w = np.arange(12, dtype=np.float32).reshape(3, 4) / 8
save_file({"weight": w.astype(np.float16), "bias": np.array([1, 2, 3], dtype=np.float32)}, sys.argv[1])
]==], file('linear.safetensors'))
      local m = nn.Linear(4, 3)
      fnn.load_safetensors(m, file('linear.safetensors'))
      local w = m.weight:tensor():to_flat()
      for i = 1, 12 do assert.equals((i - 1) / 8, w[i]) end
      assert.same({1, 2, 3}, m.bias:tensor():to_flat())
      local m2 = nn.Linear(4, 3)
      fnn.load(m2, file('linear.safetensors'))
      assert.same(w, m2.weight:tensor():to_flat())
   end)
end)

describe('files written here', function()
   it('are read back by the safetensors package value by value (F32, F16, BF16, I64)', function()
      fnn.manual_seed(3)
      local values = {}
      for i, v in ipairs(tricky) do values[i] = v end
      local r = fnn.randn(40):to_flat()
      for _, v in ipairs(r) do values[#values + 1] = v * 100 end
      local x = fnn.tensor(values)
      local ids = int64_tensor({1, -5, 9007199254740993LL, -9223372036854775807LL - 1}, {2, 2})
      local lines = {}
      for i, v in ipairs(x:to_flat()) do lines[i] = ('%.17g'):format(v) end
      write_file(file('values.txt'), table.concat(lines, '\n') .. '\n')
      for _, d in ipairs{'F32', 'F16', 'BF16'} do
         fnn.save_safetensors({x = x, ids = ids, m = fnn.randn(2, 3)}, file(d .. '.safetensors'),
                              {dtype = d, metadata = {note = 'from fastnn'}})
      end
      local out = python([==[
import sys, math, numpy as np
import safetensors
from safetensors.numpy import load_file
from safetensors import safe_open
d = sys.argv[1]
x = np.array([float(l) for l in open(d + "/values.txt").read().split()], dtype=np.float64)
x32 = x.astype(np.float32)
def bf16_reference(v):
    # nearest even among the two bf16 neighbours, compared exactly in float64; overflow -> inf
    out = []
    for f in v.astype(np.float32):
        if math.isnan(f): out.append(float("nan")); continue
        if math.isinf(f): out.append(float(f)); continue
        bits = int(np.array([f], dtype=np.float32).view(np.uint32)[0])
        lo = bits & 0xFFFF0000
        hi = lo + 0x10000
        def val(b):
            if (b & 0x7FFFFFFF) == 0x7F800000 and (lo & 0x7FFFFFFF) != 0x7F800000:
                return math.copysign(2.0**128, f)       # the rounding bound past the largest value
            return float(np.array([b], dtype=np.uint32).view(np.float32)[0])
        dl, dh = abs(float(f) - val(lo)), abs(float(f) - val(hi))
        pick = lo if (dl < dh or (dl == dh and (lo >> 16) % 2 == 0)) else hi
        r = val(pick)
        out.append(math.copysign(math.inf, f) if abs(r) == 2.0**128 else r)
    return np.array(out)
for dt in ["F32", "F16", "BF16"]:
    path = d + "/" + dt + ".safetensors"
    with safe_open(path, framework="numpy") as f:
        meta = f.metadata()
    assert meta["note"] == "from fastnn", meta
    raw = dict(safetensors.deserialize(open(path, "rb").read()))
    assert raw["x"]["dtype"] == dt and list(raw["x"]["shape"]) == [len(x)], raw["x"]["dtype"]
    assert raw["ids"]["dtype"] == "I64"
    ids = np.frombuffer(bytes(raw["ids"]["data"]), dtype="<i8").reshape(2, 2)
    assert ids.tolist() == [[1, -5], [9007199254740993, -9223372036854775808]], ids
    if dt == "F32":
        got = load_file(path)["x"].astype(np.float64); want = x32.astype(np.float64)
    elif dt == "F16":
        got = load_file(path)["x"].astype(np.float64)
        with np.errstate(over="ignore"): want = x32.astype(np.float16).astype(np.float64)
    else:
        got = (np.frombuffer(bytes(raw["x"]["data"]), dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        got = got.astype(np.float64); want = bf16_reference(x32)
    for i in range(len(x)):
        g, w = got[i], want[i]
        ok = (math.isnan(g) and math.isnan(w)) or (g == w and math.copysign(1, g) == math.copysign(1, w))
        assert ok, "%s element %d of %r: got %r, want %r" % (dt, i + 1, x32[i], g, w)
    print(dt, "ok", len(x))
]==], dir)
      assert.matches('F32 ok 71', out)
      assert.matches('F16 ok 71', out)
      assert.matches('BF16 ok 71', out)
   end)

   it('narrow to F16 and BF16 with round to nearest even (checked against a naive reference)', function()
      local x = fnn.tensor(tricky)
      local f32 = x:to_flat()
      for _, case in ipairs{{'F16', round_f16}, {'BF16', round_bf16}} do
         local name, ref = case[1], case[2]
         fnn.save_safetensors({x = x}, file('r.safetensors'), {dtype = name})
         local got = fnn.load_safetensors(file('r.safetensors')).x:to_flat()
         for i = 1, #f32 do same_value(ref(f32[i]), got[i], ('%s of %.9g'):format(name, f32[i])) end
      end
      -- a few by hand, so the reference itself is checked
      assert.equals(1, round_f16(1 + 2 ^ -11))
      assert.equals(1 + 2 ^ -9, round_f16(1 + 3 * 2 ^ -11))
      assert.equals(65504, round_f16(65519))
      assert.equals(math.huge, round_f16(65520))
      assert.equals(2 ^ -24, round_f16(1.5 * 2 ^ -25))
      assert.equals(0, round_f16(2 ^ -25))
      assert.equals(1, round_bf16(1 + 2 ^ -8))
      assert.equals(1 + 2 ^ -6, round_bf16(1 + 3 * 2 ^ -8))
   end)

   it('keep names, order, shapes and dtypes of a {name, tensor} list, a model and a map', function()
      fnn.save_safetensors({{'z', fnn.ones(2, 1)}, {'a', fnn.zeros(3)}, {'n', fnn.zeros(0, 4)}}, file('list.safetensors'))
      local info = serialize.info(file('list.safetensors'))
      assert.same({'z', 'a', 'n'}, {info.tensors[1].name, info.tensors[2].name, info.tensors[3].name})
      assert.same({0, 4}, info.tensors[3].shape)
      local back = fnn.load_safetensors(file('list.safetensors'))
      assert.same({0, 4}, back.n:shape())
      assert.same({1, 1}, back.z:to_flat())

      local m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
      fnn.save_safetensors(m, file('model.safetensors'), {dtype = 'BF16'})
      local t = fnn.load_safetensors(file('model.safetensors'))
      assert.same({'1.bias', '1.weight', '2.bias', '2.num_batches_tracked', '2.running_mean', '2.running_var',
                   '2.weight'}, (function()
         local names = {}
         for k in pairs(t) do names[#names + 1] = k end
         table.sort(names)
         return names
      end)())
      assert.equals('int64', t['2.num_batches_tracked']:dtype())
      local w = m[1].weight:tensor():to_flat()
      for i, v in ipairs(t['1.weight']:to_flat()) do assert.equals(round_bf16(w[i]), v) end
      -- an F16 copy loads into the model too, widened
      fnn.save_safetensors(m, file('half.safetensors'), {dtype = 'F16'})
      local m2 = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
      fnn.load(m2, file('half.safetensors'))
      local w2 = m2[1].weight:tensor():to_flat()
      for i = 1, #w do assert.equals(round_f16(w[i]), w2[i]) end
   end)

   it('refuse a dtype they cannot store and other bad arguments at the caller\'s line', function()
      local _, err = pcall(function() fnn.save_safetensors({x = fnn.ones(2)}, file('x.safetensors'), {dtype = 'I8'}) end)
      assert.matches("safetensors_spec.lua:%d+: save_safetensors: dtype is I8, expected 'F32', 'F16' or 'BF16'", err)
      _, err = pcall(function() fnn.save_safetensors({x = 3}, file('x.safetensors')) end)
      assert.matches('save_safetensors: x = number: expected name = tensor entries', err)
      _, err = pcall(function() fnn.save_safetensors(fnn.ones(2), file('x.safetensors')) end)
      assert.matches('save_safetensors: expected a module or a table of tensors, got a cdata', err)
      _, err = pcall(function() fnn.load_safetensors(42) end)
      assert.matches('load_safetensors: path is a number, expected a file name', err)
   end)
end)
