-- lstm_cell against the LSTM formula in naive Lua (doubles) and against the same cell
-- composed from narrow/sigmoid/tanh/mul/add, values and gradients; strided, expanded
-- and empty inputs; the errors.
local fnn = require 'fastnn'

local function close(expected, got, tol)
   assert.is_true(math.abs(expected - got) <= (tol or 1e-5) * math.max(1, math.abs(expected)),
                  ('expected %.7g got %.7g'):format(expected, got))
end

local function approx(expected, t, tol)
   local got = t:to_flat()
   assert.equals(#expected, #got)
   for i = 1, #expected do close(expected[i], got[i], tol) end
end

local function sigmoid(x) return 1 / (1 + math.exp(-x)) end
local function tanh(x)
   if x > 20 then return 1 elseif x < -20 then return -1 end
   local e = math.exp(2 * x)
   return (e - 1) / (e + 1)
end

-- naive cell on Lua tables: z rows of 4H, c rows of H -> flat h, flat c'
local function naive(zt, ct)
   local h, cn = {}, {}
   for r, zr in ipairs(zt) do
      local H = #ct[r]
      for j = 1, H do
         local i, f = sigmoid(zr[j]), sigmoid(zr[H + j])
         local g, o = tanh(zr[2 * H + j]), sigmoid(zr[3 * H + j])
         local c2 = f * ct[r][j] + i * g
         h[#h + 1] = o * tanh(c2)
         cn[#cn + 1] = c2
      end
   end
   return h, cn
end

-- the same cell from separate ops (the composed path of bench/lstm_seq.lua)
local function composed(z, c)
   local H = c:size(2)
   local i = z:narrow(2, 1, H):sigmoid()
   local f = z:narrow(2, H + 1, H):sigmoid()
   local g = z:narrow(2, 2 * H + 1, H):tanh()
   local o = z:narrow(2, 3 * H + 1, H):sigmoid()
   local c2 = f * c + i * g
   return o * c2:tanh(), c2
end

describe('lstm_cell', function()
   it('computes h = o tanh(f c + i g) and c\' = f c + i g, gates in the order i, f, g, o', function()
      local z, c = fnn.randn(4, 12) * 2, fnn.randn(4, 3)
      local h, cn = fnn.lstm_cell(z, c)
      assert.same({4, 3}, h:shape())
      assert.same({4, 3}, cn:shape())
      local eh, ec = naive(z:to_table(), c:to_table())
      approx(eh, h)
      approx(ec, cn)
   end)

   it('takes each gate from its own quarter of z', function()
      -- i = sigmoid(0) = 0.5, f = sigmoid(large) = 1, g = tanh(0.5), o = sigmoid(-large) = 0
      local z = fnn.tensor{{0, 0, 30, 30, 0.5, 0.5, -30, -30}}
      local c = fnn.tensor{{1, -2}}
      local h, cn = z:lstm_cell(c)
      local want = 1 + 0.5 * tanh(0.5)
      approx({want, -2 + 0.5 * tanh(0.5)}, cn)
      approx({0, 0}, h, 1e-6)
   end)

   it('stays finite and saturates for large pre-activations', function()
      local z = fnn.tensor{{100, -100, 100, -100, 100, -100, 100, -100}}
      local c = fnn.tensor{{5, -5}}
      local h, cn = fnn.lstm_cell(z, c)
      local eh, ec = naive(z:to_table(), c:to_table())
      approx(eh, h)
      approx(ec, cn)
   end)

   it('reads strided z and an expanded c', function()
      local zt = fnn.randn(8, 5)           -- z = zt:t() is [5, 8], not contiguous
      local c0 = fnn.randn(1, 2)
      local z, c = zt:t(), c0:expand(5, 2)
      assert.is_false(z:is_contiguous())
      local h, cn = fnn.lstm_cell(z, c)
      local eh, ec = naive(z:to_table(), c:to_table())
      approx(eh, h)
      approx(ec, cn)
   end)

   it('handles empty batches and a zero hidden size', function()
      local h, cn = fnn.lstm_cell(fnn.zeros(0, 8), fnn.zeros(0, 2))
      assert.same({0, 2}, h:shape())
      assert.same({0, 2}, cn:shape())
      local h2, c2 = fnn.lstm_cell(fnn.zeros(3, 0), fnn.zeros(3, 0))
      assert.same({3, 0}, h2:shape())
      assert.same({3, 0}, c2:shape())
   end)

   it('matches the composed cell over many rows (the threaded path)', function()
      local z, c = fnn.randn(600, 4 * 128), fnn.randn(600, 128)
      local h, cn = fnn.lstm_cell(z, c)
      local rh, rc = composed(z, c)
      approx(rh:to_flat(), h, 1e-5)
      approx(rc:to_flat(), cn, 1e-5)
   end)

   it('gives the composed cell\'s gradients for z and c', function()
      local z0, c0 = fnn.randn(3, 16) * 1.5, fnn.randn(3, 4)
      local wh, wc = fnn.randn(3, 4), fnn.randn(3, 4)
      local function grads(cell)
         local pz, pc = fnn.Param(z0), fnn.Param(c0)
         local h, cn = cell(pz:tensor(), pc:tensor())
         local loss = (h * wh):sum() + (cn * wc):sum()
         loss:backward()
         return pz:grad(), pc:grad()
      end
      local gz, gc = grads(fnn.lstm_cell)
      local ez, ec = grads(composed)
      approx(ez:to_flat(), gz, 1e-5)
      approx(ec:to_flat(), gc, 1e-5)
   end)

   it('propagates through several steps as the composed cell does (BPTT)', function()
      local x0, c0, w = fnn.randn(4, 2, 12), fnn.randn(2, 3), fnn.randn(3, 12) * 0.5
      local function grads(cell)
         local px, pc = fnn.Param(x0), fnn.Param(c0)
         local x, c, h = px:tensor(), pc:tensor(), nil
         for t = 1, 4 do
            local z = x:select(1, t)
            if h then z = z + h:matmul(w) end   -- the recurrent term
            h, c = cell(z, c)
         end
         local loss = h:sum() + c:sum() * 0.3
         loss:backward()
         return px:grad(), pc:grad()
      end
      local gx, gc = grads(fnn.lstm_cell)
      local ex, ec = grads(composed)
      approx(ex:to_flat(), gx, 1e-5)
      approx(ec:to_flat(), gc, 1e-5)
   end)

   it('gives a gradient to whichever input needs one', function()
      local z0, c0 = fnn.randn(2, 8), fnn.randn(2, 2)
      local pz = fnn.Param(z0)
      local h = fnn.lstm_cell(pz:tensor(), c0)
      h:sum():backward()
      local pz2 = fnn.Param(z0)
      local rh = composed(pz2:tensor(), c0)
      rh:sum():backward()
      approx(pz2:grad():to_flat(), pz:grad(), 1e-5)

      local pc = fnn.Param(c0)
      local _, cn = fnn.lstm_cell(z0, pc:tensor())
      cn:sum():backward()
      -- dc'/dc = f = sigmoid(z[:, H:2H])
      local zt, want = z0:to_table(), {}
      for r = 1, 2 do for j = 1, 2 do want[#want + 1] = sigmoid(zt[r][2 + j]) end end
      approx(want, pc:grad())
   end)

   it('refuses shapes that do not agree, naming both', function()
      local _, err = pcall(function()
         local h = fnn.lstm_cell(fnn.zeros(4, 10), fnn.zeros(4, 3))
         return h
      end)
      assert.matches('rnn_spec.lua:%d+: lstm_cell: gates %[4,10%] and cell %[4,3%] do not agree', err)
      local _, e2 = pcall(function() local h = fnn.lstm_cell(fnn.zeros(3, 8), fnn.zeros(2, 2)); return h end)
      assert.matches('rnn_spec.lua:%d+: lstm_cell: gates %[3,8%] and cell %[2,2%] do not agree', e2)
      local _, e3 = pcall(function() return fnn.lstm_cell(fnn.zeros(8), fnn.zeros(2)) end)
      assert.matches('lstm_cell: gates %[8%] and cell %[2%] do not agree', e3)
      local _, e4 = pcall(function() local h = fnn.lstm_cell(fnn.zeros(2, 8), 'c'); return h end)
      assert.matches('rnn_spec.lua:%d+: lstm_cell: c is a string, expected a tensor', e4)
   end)
end)
