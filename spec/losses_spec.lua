-- Every loss of nn and every reduction against its formula computed here in Lua doubles on small
-- inputs (weights, ignore_index, label smoothing, pos_weight, from_logits both ways, batchmean,
-- margin), gradients by fnn.gradcheck or against the analytic gradient, the loss objects, and
-- the errors (op, shapes, and the caller's line).
local fnn = require 'fastnn'
local nn = fnn.nn
local support = require 'support'
local approx, err_of = support.approx, support.err_of

local exp, log, sqrt, max, min, abs = math.exp, math.log, math.sqrt, math.max, math.min, math.abs

local function sum(t) local s = 0 for _, v in ipairs(t) do s = s + v end return s end
local function mean(t) return sum(t) / #t end
local function scalar(t) return {t:item()} end
local function rows_of(x) return x:to_table() end

-- the three reductions of per-element (or per-site) losses, with the mean's denominator
local function reduced(per, denom)
   return {none = per, sum = sum(per), mean = sum(per) / (denom or #per)}
end

local function check_reductions(f, per, denom, tol)
   local want = reduced(per, denom)
   approx(per, f('none'), tol)
   approx({want.sum}, f('sum'), tol)
   approx({want.mean}, f('mean'), tol)
end

-- a spec-line pattern for error messages raised at the caller's line
local HERE = 'losses_spec%.lua:%d+: '

-- ---------------------------------------------------------------------------
-- naive references

-- cross entropy of one row of logits (a Lua array) at class y, PyTorch's label smoothing and weights
local function ce_row(row, y, w, e)
   local C, m = #row, -math.huge
   for _, v in ipairs(row) do m = max(m, v) end
   local s = 0
   for _, v in ipairs(row) do s = s + exp(v - m) end
   local lse = m + log(s)
   local wy = w and w[y] or 1
   local smooth = 0
   for c = 1, C do smooth = smooth + (w and w[c] or 1) * (lse - row[c]) end
   return (1 - (e or 0)) * wy * (lse - row[y]) + (e or 0) / C * smooth, wy
end

-- per-row losses and the weighted-mean denominator; ids equal to ignore count nowhere
local function ce_ref(rows, ids, w, e, ignore)
   local per, denom = {}, 0
   for i, row in ipairs(rows) do
      if ids[i] == ignore then per[i] = 0
      else
         local l, wy = ce_row(row, ids[i], w, e)
         per[i] = l
         denom = denom + wy
      end
   end
   return per, denom
end

local function softmax_row(row)
   local m = -math.huge
   for _, v in ipairs(row) do m = max(m, v) end
   local s, p = 0, {}
   for c, v in ipairs(row) do p[c] = exp(v - m); s = s + p[c] end
   for c = 1, #p do p[c] = p[c] / s end
   return p
end

local function sigmoid(x) return 1 / (1 + exp(-x)) end

describe('cross_entropy', function()
   local logits = fnn.tensor{{1.0, 2.0, 0.5, -1.0}, {0.3, -0.2, 0.9, 0.0}, {-2.0, 1.5, 0.1, 0.4},
                             {0.0, 0.0, 3.0, -0.5}, {1.2, -1.1, 0.7, 2.2}}
   local ids = {2, 4, 1, 3, 2}
   local rows = rows_of(logits)

   it('reduces per row with mean, sum and none, from int64, float or Lua-array ids', function()
      local per = ce_ref(rows, ids)
      for _, t in ipairs{fnn.long(ids), fnn.tensor(ids), ids} do
         check_reductions(function(r) return nn.cross_entropy(logits, t, {reduction = r}) end, per)
      end
      approx({mean(per)}, nn.cross_entropy(logits, ids))
      approx({mean(per)}, logits:cross_entropy(ids))
      assert.same({5}, nn.cross_entropy(logits, ids, {reduction = 'none'}):shape())
   end)

   it('with class weights is a weighted mean: sum w[y] l / sum w[y]', function()
      local w = {0.5, 2.0, 1.0, 3.0}
      local per, denom = ce_ref(rows, ids, w)
      check_reductions(function(r) return nn.cross_entropy(logits, ids, {weight = w, reduction = r}) end, per, denom)
      approx({sum(per) / denom}, nn.cross_entropy(logits, ids, {weight = fnn.tensor(w)}))
      -- the same as repeating each row w[y] times when the weights are whole numbers
      local rep_rows, rep_ids = {}, {}
      local wi = {1, 2, 1, 3}
      for i, row in ipairs(rows) do
         for _ = 1, wi[ids[i]] do rep_rows[#rep_rows + 1] = row; rep_ids[#rep_ids + 1] = ids[i] end
      end
      approx(nn.cross_entropy(fnn.tensor(rep_rows), rep_ids):to_flat(), nn.cross_entropy(logits, ids, {weight = wi}))
   end)

   it('ignores ids equal to ignore_index (-100 by default): not in the sum, not in the mean', function()
      local with = {2, -100, 1, -100, 2}
      local per, denom = ce_ref(rows, with, nil, 0, -100)
      assert.equals(3, denom)
      check_reductions(function(r) return nn.cross_entropy(logits, with, {reduction = r}) end, per, denom)
      local custom = {2, 7, 1, 3, 7}
      local per2, denom2 = ce_ref(rows, custom, {1, 2, 3, 4}, 0.1, 7)
      check_reductions(function(r)
         return nn.cross_entropy(logits, fnn.long(custom), {ignore_index = 7, weight = {1, 2, 3, 4},
                                                            label_smoothing = 0.1, reduction = r})
      end, per2, denom2)
      -- every row ignored: the mean is 0/0 = nan, as PyTorch
      local all = nn.cross_entropy(logits, {-100, -100, -100, -100, -100}):item()
      assert.is_true(all ~= all)
      -- ignored rows get no gradient
      local p = fnn.Param(logits)
      nn.cross_entropy(p:tensor(), with):backward()
      local g = p:grad():to_table()
      assert.same({0, 0, 0, 0}, g[2])
      assert.same({0, 0, 0, 0}, g[4])
   end)

   it('smooths labels as PyTorch: (1 - e) nll + e/C sum_c w_c (-log p_c)', function()
      for _, e in ipairs{0.1, 0.5, 1.0} do
         local per = ce_ref(rows, ids, nil, e)
         check_reductions(function(r) return nn.cross_entropy(logits, ids, {label_smoothing = e, reduction = r}) end,
                          per)
         local w = {1, 0.25, 2, 0.5}
         local perw, denom = ce_ref(rows, ids, w, e)
         approx({sum(perw) / denom}, nn.cross_entropy(logits, ids, {label_smoothing = e, weight = w}))
      end
   end)

   it('has the analytic gradient with weights and smoothing', function()
      local w, e = {0.5, 2.0, 1.0, 3.0}, 0.2
      local p = fnn.Param(logits)
      local _, denom = ce_ref(rows, ids, w, e)
      nn.cross_entropy(p:tensor(), ids, {weight = w, label_smoothing = e}):backward()
      local W = sum(w)
      local expected = {}
      for i, row in ipairs(rows) do
         local pr, y = softmax_row(row), ids[i]
         for c = 1, 4 do
            local d = pr[c] * ((1 - e) * w[y] + e * W / 4) - e * w[c] / 4 - (c == y and (1 - e) * w[y] or 0)
            expected[#expected + 1] = d / denom
         end
      end
      approx(expected, p:grad())
   end)

   it('takes [N, C, d...] logits with [N, d...] ids, one loss per site', function()
      local x = fnn.randn(2, 3, 2, 2)
      local t = {{{1, 3}, {2, 2}}, {{3, 1}, {1, 2}}}
      local xv = x:to_table()
      local per, per_w, denom = {}, {}, 0
      local w = {1, 2, 0.5}
      for n = 1, 2 do
         for h = 1, 2 do
            for k = 1, 2 do
               local row = {xv[n][1][h][k], xv[n][2][h][k], xv[n][3][h][k]}
               per[#per + 1] = ce_row(row, t[n][h][k])
               local l, wy = ce_row(row, t[n][h][k], w)
               per_w[#per_w + 1] = l
               denom = denom + wy
            end
         end
      end
      check_reductions(function(r) return nn.cross_entropy(x, fnn.long(t), {reduction = r}) end, per)
      assert.same({2, 2, 2}, nn.cross_entropy(x, fnn.long(t), {reduction = 'none'}):shape())
      approx({sum(per_w) / denom}, nn.cross_entropy(x, fnn.long(t), {weight = w}))
      -- a non-contiguous input reads the same values
      local xt = x:permute(1, 2, 4, 3):contiguous():permute(1, 2, 4, 3)
      approx({mean(per)}, nn.cross_entropy(xt, fnn.long(t)))
   end)

   it('takes unbatched [C] logits with one id', function()
      local row = {0.2, -1.0, 2.5}
      approx({(ce_row(row, 3))}, nn.cross_entropy(fnn.tensor(row), 3))
      approx({(ce_row(row, 1))}, nn.cross_entropy(fnn.tensor(row), fnn.long(1), {reduction = 'none'}))
      assert.same({}, nn.cross_entropy(fnn.tensor(row), 2, {reduction = 'none'}):shape())
   end)

   it('takes class probabilities shaped like the logits (soft targets)', function()
      local probs = {{0.1, 0.6, 0.2, 0.1}, {0.25, 0.25, 0.25, 0.25}, {1, 0, 0, 0}, {0, 0.5, 0.5, 0}, {0.4, 0, 0, 0.6}}
      local w, e = {1, 2, 0.5, 1.5}, 0.2
      local per, per_w = {}, {}
      for i, row in ipairs(rows) do
         local pr = softmax_row(row)
         local a, b = 0, 0
         for c = 1, 4 do
            local t = probs[i][c] * (1 - e) + e / 4
            a = a - t * log(pr[c])
            b = b - w[c] * probs[i][c] * log(pr[c])
         end
         per[i], per_w[i] = a, b
      end
      check_reductions(function(r)
         return nn.cross_entropy(logits, fnn.tensor(probs), {label_smoothing = e, reduction = r})
      end, per)
      approx({mean(per_w)}, nn.cross_entropy(logits, fnn.tensor(probs), {weight = w}))   -- mean over sites
      local ok = fnn.gradcheck(function(x) return nn.cross_entropy(x, fnn.tensor(probs), {weight = w}) end,
                               {fnn.randn(5, 4)})
      assert.is_true(ok)
   end)

   it('reads long rows (the vectorized row kernel) and very long ones the same way', function()
      for _, C in ipairs{17, 40, 1100} do
         local x = fnn.randn(3, C) * 3
         local t = {C, 1, math.floor(C / 2)}
         local per = ce_ref(rows_of(x), t, nil, 0.1)
         approx({mean(per)}, nn.cross_entropy(x, t, {label_smoothing = 0.1}), 1e-5)   -- no graph
         local p = fnn.Param(x)
         local l = nn.cross_entropy(p:tensor(), t, {reduction = 'none', label_smoothing = 0.1})
         approx(per, l, 1e-5)
         l:sum():backward()
         local g, xv = p:grad():to_table(), rows_of(x)
         for i = 1, 3 do
            local pr = softmax_row(xv[i])
            for _, c in ipairs{1, t[i], C} do
               local want = pr[c] - 0.1 / C - (c == t[i] and 0.9 or 0)
               assert.is_true(abs(g[i][c] - want) < 1e-5, ('C %d row %d class %d: %g vs %g'):format(C, i, c, g[i][c], want))
            end
         end
         -- a transposed (strided) view takes the other path and agrees
         approx({mean(per)}, nn.cross_entropy(x:t():contiguous():t(), t, {label_smoothing = 0.1}), 1e-5)
      end
   end)

   it('gives nan for an empty batch and handles one class', function()
      local e = nn.cross_entropy(fnn.zeros(0, 3), fnn.long(fnn.zeros(0)))
      assert.is_true(e:item() ~= e:item())
      assert.same({0}, nn.cross_entropy(fnn.zeros(0, 3), fnn.long(fnn.zeros(0)), {reduction = 'none'}):shape())
      approx({0, 0}, nn.cross_entropy(fnn.tensor{{5}, {-2}}, {1, 1}, {reduction = 'none'}))
   end)

   it('stays finite with huge logits', function()
      local l = nn.cross_entropy(fnn.tensor{{1000, 0, -1000}, {-500, 500, 499}}, {1, 3}, {label_smoothing = 0.1})
      local r1 = 0.9 * 0 + 0.1 / 3 * ((1000 - 1000) + (1000 - 0) + (1000 + 1000))
      local lse = 500 + log(1 + exp(-1))
      local r2 = 0.9 * (lse - 499) + 0.1 / 3 * ((lse + 500) + (lse - 500) + (lse - 499))
      approx({(r1 + r2) / 2}, l, 1e-4)
   end)

   it('refuses bad ids, shapes and options, naming them, at the caller\'s line', function()
      assert.matches(HERE .. 'cross_entropy: class id 11 outside 1%.%.10 %(row 3 of targets %[4%]%)',
                     err_of(function() local l = nn.cross_entropy(fnn.zeros(4, 10), {1, 2, 11, 3}); return l end))
      assert.matches(HERE .. 'cross_entropy: class id 4 outside 1%.%.3 %(element 3 of targets %[2,2%]%)',
                     err_of(function() local l = nn.cross_entropy(fnn.zeros(2, 3, 2), fnn.long{{1, 1}, {4, 1}}); return l end))
      assert.matches(HERE .. 'cross_entropy: class id %-100 outside 1%.%.3',
                     err_of(function() local l = nn.cross_entropy(fnn.zeros(1, 3), {-100}, {ignore_index = false}); return l end))
      assert.matches(HERE .. 'cross_entropy: logits %[2,3,4%] and targets %[2,3%] do not agree %(expected targets %[2,4%]',
                     err_of(function() local l = nn.cross_entropy(fnn.zeros(2, 3, 4), fnn.long{{1, 1, 1}, {1, 1, 1}}); return l end))
      assert.matches(HERE .. 'cross_entropy: weight %[3%] should hold one value per class %(%[4%]%) for input %[5,4%]',
                     err_of(function() local l = nn.cross_entropy(logits, ids, {weight = {1, 2, 3}}); return l end))
      assert.matches(HERE .. 'cross_entropy: label_smoothing 1%.5 is outside %[0, 1%]',
                     err_of(function() local l = nn.cross_entropy(logits, ids, {label_smoothing = 1.5}); return l end))
      assert.matches(HERE .. "cross_entropy: unknown option 'smoothing' %(options: label_smoothing, ignore_index, reduction, weight%)",
                     err_of(function() local l = nn.cross_entropy(logits, ids, {smoothing = 0.1}); return l end))
      assert.matches(HERE .. "cross_entropy: reduction 'avg' is not one of 'mean', 'sum', 'none'",
                     err_of(function() local l = nn.cross_entropy(logits, ids, {reduction = 'avg'}); return l end))
      assert.matches(HERE .. 'cross_entropy: ignore_index 1%.5 is not a whole number',
                     err_of(function() local l = nn.cross_entropy(logits, ids, {ignore_index = 1.5}); return l end))
   end)
end)

describe('nll', function()
   local x = fnn.tensor{{-1.2, -0.4, -2.0}, {-0.1, -3.0, -1.5}, {-0.7, -0.7, -0.9}, {-2.2, -0.3, -1.0}}
   local xv = rows_of(x)

   it('is -w[y] x[y] per row, a weighted mean, with ignore_index', function()
      local ids, w = {3, 1, -100, 2}, {2, 0.5, 1.5}
      local per, denom = {}, 0
      for i = 1, 4 do
         if ids[i] == -100 then per[i] = 0
         else per[i] = -w[ids[i]] * xv[i][ids[i]]; denom = denom + w[ids[i]] end
      end
      check_reductions(function(r) return nn.nll(x, ids, {weight = w, reduction = r}) end, per, denom)
      approx({-(xv[1][3] + xv[2][1] + xv[3][2] + xv[4][2]) / 4}, nn.nll_loss(x, fnn.long{3, 1, 2, 2}))
      approx({-xv[2][3]}, nn.nll(x[2] and fnn.tensor(xv[2]), 3))   -- unbatched [C]
   end)

   it('equals cross_entropy of the logits after log_softmax', function()
      local logits = fnn.randn(3, 5, 2)
      local t = fnn.long{{1, 5}, {2, 2}, {4, 3}}
      approx(nn.cross_entropy(logits, t, {reduction = 'none'}):to_flat(),
             nn.nll(logits:log_softmax(2), t, {reduction = 'none'}), 1e-5)
   end)

   it('sends -w[y] s to the target entry only', function()
      local p = fnn.Param(x)
      nn.nll(p:tensor(), {3, 1, 2, 2}, {weight = {2, 0.5, 1.5}}):backward()
      local d = 1.5 + 2 + 0.5 + 0.5
      approx({0, 0, -1.5 / d, -2 / d, 0, 0, 0, -0.5 / d, 0, 0, -0.5 / d, 0}, p:grad())
   end)

   it('refuses ids out of range and mismatched shapes, as nll_loss', function()
      assert.matches(HERE .. 'nll_loss: class id 4 outside 1%.%.3 %(row 2 of targets %[4%]%)',
                     err_of(function() local l = nn.nll(x, {1, 4, 1, 1}); return l end))
      assert.matches(HERE .. 'nll_loss: input %[4,3%] and targets %[3%] do not agree',
                     err_of(function() local l = nn.nll(x, {1, 1, 1}); return l end))
   end)
end)

describe('binary_cross_entropy', function()
   local p = fnn.tensor{{0.9, 0.2, 0.5}, {0.01, 0.7, 0.999}}
   local t = fnn.tensor{{1, 0, 0.3}, {0, 1, 1}}
   local pv, tv = p:to_flat(), t:to_flat()

   local function bce(pp, tt, w)
      return -w * (tt * max(log(pp), -100) + (1 - tt) * max(log(1 - pp), -100))
   end

   it('is -(t log p + (1 - t) log(1 - p)) per element, with weights broadcast', function()
      local per, per_w = {}, {}
      local w = {2, 1, 0.5}
      for i = 1, 6 do
         per[i] = bce(pv[i], tv[i], 1)
         per_w[i] = bce(pv[i], tv[i], w[(i - 1) % 3 + 1])
      end
      check_reductions(function(r) return nn.binary_cross_entropy(p, t, {reduction = r}) end, per, nil, 1e-4)
      check_reductions(function(r) return nn.binary_cross_entropy(p, t, {weight = w, reduction = r}) end, per_w, nil, 1e-4)
      approx({mean(per)}, fnn.binary_cross_entropy(p, t), 1e-4)
   end)

   it('clamps each log at -100, so p = 0 or 1 stays finite (PyTorch)', function()
      local l = nn.binary_cross_entropy(fnn.tensor{0, 1, 0, 1}, fnn.tensor{1, 0, 0, 1}, {reduction = 'none'})
      approx({100, 100, 0, 0}, l)
   end)

   it('has the analytic gradients for the probabilities and the targets', function()
      local pp, pt = fnn.Param(p), fnn.Param(t)
      nn.binary_cross_entropy(pp:tensor(), pt:tensor(), {weight = {2, 1, 0.5}}):backward()
      local gp, gt = {}, {}
      for i = 1, 6 do
         local w = ({2, 1, 0.5})[(i - 1) % 3 + 1] / 6
         gp[i] = w * (pv[i] - tv[i]) / (pv[i] * (1 - pv[i]))
         gt[i] = w * (log(1 - pv[i]) - log(pv[i]))
      end
      approx(gp, pp:grad(), 1e-3)
      approx(gt, pt:grad(), 1e-4)
   end)

   it('refuses a value outside [0, 1], naming it and its position', function()
      assert.matches(HERE .. 'binary_cross_entropy: input 1%.5 at element 4 of %[2,2%] is outside %[0, 1%]',
                     err_of(function()
                        local l = nn.binary_cross_entropy(fnn.tensor{{0.5, 0.5}, {0.2, 1.5}}, fnn.zeros(2, 2))
                        return l
                     end))
      assert.matches('binary_cross_entropy: input %-0%.25 at element 1 of %[1%]',
                     err_of(function() local l = nn.binary_cross_entropy(fnn.tensor{-0.25}, fnn.zeros(1)); return l end))
      assert.matches('binary_cross_entropy: input nan at element 2 of %[2%]',
                     err_of(function() local l = nn.binary_cross_entropy(fnn.tensor{0.5, 0 / 0}, fnn.zeros(2)); return l end))
      assert.matches(HERE .. 'binary_cross_entropy: input %[2,3%] and target %[3,2%] differ in shape',
                     err_of(function() local l = nn.binary_cross_entropy(p, fnn.zeros(3, 2)); return l end))
      assert.matches(HERE .. 'binary_cross_entropy: weight %[2%] does not broadcast to input %[2,3%]',
                     err_of(function() local l = nn.binary_cross_entropy(p, t, {weight = {1, 2}}); return l end))
   end)
end)

describe('bce_with_logits', function()
   local x = fnn.tensor{{2.0, -1.0, 0.3}, {-4.0, 0.0, 5.0}}
   local t = fnn.tensor{{1, 0, 0.4}, {0, 1, 1}}
   local xv, tv = x:to_flat(), t:to_flat()

   local function softplus(v) return max(v, 0) + log(1 + exp(-abs(v))) end
   local function ref(xx, tt, w, pw)
      return w * ((1 - tt) * xx + (1 + (pw - 1) * tt) * softplus(-xx))
   end

   it('is w ((1 - t) x + (1 + (pw - 1) t) softplus(-x)), with pos_weight per class', function()
      local pw, w = {3, 1, 0.5}, {2, 0.5}
      local per, per_w = {}, {}
      for i = 1, 6 do
         per[i] = ref(xv[i], tv[i], 1, 1)
         per_w[i] = ref(xv[i], tv[i], w[math.floor((i - 1) / 3) + 1], pw[(i - 1) % 3 + 1])
      end
      check_reductions(function(r) return nn.bce_with_logits(x, t, {reduction = r}) end, per)
      check_reductions(function(r)
         return nn.bce_with_logits(x, t, {pos_weight = pw, weight = fnn.tensor{{2}, {0.5}}, reduction = r})
      end, per_w)
   end)

   it('equals binary_cross_entropy of sigmoid(x) and stays finite for huge logits', function()
      approx(nn.binary_cross_entropy(x:sigmoid(), t, {reduction = 'none'}):to_flat(),
             nn.bce_with_logits(x, t, {reduction = 'none'}), 1e-4)
      approx({0, 200, 200, 0}, nn.bce_with_logits(fnn.tensor{200, -200, 200, -200}, fnn.tensor{1, 1, 0, 0},
                                                  {reduction = 'none'}))
   end)

   it('has the analytic gradients: sigmoid(x) - t without pos_weight', function()
      local px, pt = fnn.Param(x), fnn.Param(t)
      nn.bce_with_logits(px:tensor(), pt:tensor(), {reduction = 'sum', pos_weight = 2}):backward()
      local gx, gt = {}, {}
      for i = 1, 6 do
         gx[i] = (1 - tv[i]) - (1 + tv[i]) * sigmoid(-xv[i])
         gt[i] = softplus(-xv[i]) - xv[i]
      end
      approx(gx, px:grad(), 1e-5)
      approx(gt, pt:grad(), 1e-5)
      local p2 = fnn.Param(x)
      nn.bce_with_logits(p2:tensor(), t):backward()
      local g2 = {}
      for i = 1, 6 do g2[i] = (sigmoid(xv[i]) - tv[i]) / 6 end
      approx(g2, p2:grad(), 1e-5)
   end)

   it('refuses a pos_weight that does not broadcast', function()
      assert.matches(HERE .. 'bce_with_logits: pos_weight %[2%] does not broadcast to input %[2,3%]',
                     err_of(function() local l = nn.bce_with_logits(x, t, {pos_weight = {1, 2}}); return l end))
   end)
end)

describe('mse, mae, huber', function()
   local p = fnn.tensor{{0.5, -1.0, 2.0}, {0.0, 3.0, -0.5}}
   local t = fnn.tensor{{1.0, -1.0, 0.0}, {0.5, 1.25, 0.5}}
   local d = {}
   do
      local pv, tv = p:to_flat(), t:to_flat()
      for i = 1, 6 do d[i] = pv[i] - tv[i] end
   end

   it('mse is (p - t)^2, mae |p - t|, over every element', function()
      local sq, ab = {}, {}
      for i = 1, 6 do sq[i] = d[i] ^ 2; ab[i] = abs(d[i]) end
      check_reductions(function(r) return nn.mse(p, t, {reduction = r}) end, sq)
      check_reductions(function(r) return nn.mae(p, t, {reduction = r}) end, ab)
      check_reductions(function(r) return nn.l1(p, t, r) end, ab)
   end)

   it('huber is 0.5 d^2 inside delta and delta (|d| - delta/2) outside', function()
      for _, delta in ipairs{1, 0.6, 2} do
         local per = {}
         for i = 1, 6 do
            local a = abs(d[i])
            per[i] = a < delta and 0.5 * a * a or delta * (a - 0.5 * delta)
         end
         check_reductions(function(r) return nn.huber(p, t, {delta = delta, reduction = r}) end, per)
      end
   end)

   it('have gradients matching finite differences (away from the kinks)', function()
      local target = fnn.tensor{{0.1, 0.2, 0.3}, {0.4, 0.5, 0.6}}
      local x0 = fnn.tensor{{1.3, -0.8, 0.9}, {2.6, 0.2, -1.7}}   -- |x - t| nowhere near 0 or delta
      for _, f in ipairs{function(x) return nn.mae(x, target) end,
                         function(x) return nn.huber(x, target, {delta = 1.5, reduction = 'sum'}) end,
                         function(x) return nn.mse(x, target, {reduction = 'none'}) end} do
         local ok, report = fnn.gradcheck(f, {x0})
         assert(ok, report)
      end
   end)

   it('refuse mismatched shapes and int64 tensors', function()
      assert.matches(HERE .. 'mse: prediction %[2,3%] and target %[3,2%] differ in shape',
                     err_of(function() local l = nn.mse(p, fnn.zeros(3, 2), {reduction = 'none'}); return l end))
      assert.matches(HERE .. 'mae: prediction %[2,3%] and target %[6%] differ in shape',
                     err_of(function() local l = nn.mae(p, fnn.zeros(6)); return l end))
      assert.matches(HERE .. 'huber: target is an int64 tensor %[2,3%], expected float32',
                     err_of(function() local l = nn.huber(p, fnn.long{{1, 2, 3}, {4, 5, 6}}); return l end))
      assert.matches(HERE .. 'huber: delta %-1 should be positive',
                     err_of(function() local l = nn.huber(p, t, {delta = -1}); return l end))
   end)
end)

describe('categorical_cross_entropy (Keras)', function()
   local probs = fnn.tensor{{0.7, 0.2, 0.1}, {0.1, 0.1, 0.8}, {0.3, 0.6, 0.3}}   -- row 3 sums to 1.2
   local onehot = fnn.tensor{{1, 0, 0}, {0, 0, 1}, {0.2, 0.8, 0}}
   local pv, tv = rows_of(probs), rows_of(onehot)

   it('renormalizes probabilities, clips them to [1e-7, 1 - 1e-7], -sum t log p per sample', function()
      local per, per_s = {}, {}
      for i = 1, 3 do
         local s = pv[i][1] + pv[i][2] + pv[i][3]
         per[i], per_s[i] = 0, 0
         for c = 1, 3 do
            local q = min(max(pv[i][c] / s, 1e-7), 1 - 1e-7)
            per[i] = per[i] - tv[i][c] * log(q)
            per_s[i] = per_s[i] - (tv[i][c] * 0.7 + 0.1) * log(q)
         end
      end
      check_reductions(function(r) return nn.categorical_cross_entropy(probs, onehot, {reduction = r}) end, per)
      approx({mean(per_s)}, nn.categorical_cross_entropy(probs, onehot, {label_smoothing = 0.3}))
      -- a zero probability is clipped, not -inf
      approx({-log(1e-7)}, nn.categorical_cross_entropy(fnn.tensor{{1, 0}}, fnn.tensor{{0, 1}}), 1e-3)
   end)

   it('with from_logits is -sum t log_softmax(x), and takes a class axis', function()
      local x = fnn.tensor{{1, 2, 0.5}, {0, -1, 3}, {0.2, 0.2, 0.2}}
      local per = {}
      for i, row in ipairs(rows_of(x)) do
         local pr = softmax_row(row)
         per[i] = 0
         for c = 1, 3 do per[i] = per[i] - tv[i][c] * log(pr[c]) end
      end
      check_reductions(function(r)
         return nn.categorical_cross_entropy(x, onehot, {from_logits = true, reduction = r})
      end, per)
      approx(per, nn.categorical_cross_entropy(x:t(), onehot:t(), {from_logits = true, axis = 1, reduction = 'none'}))
      local ok, report = fnn.gradcheck(function(v) return nn.categorical_cross_entropy(v, onehot, {from_logits = true}) end,
                                       {fnn.randn(3, 3)})
      assert(ok, report)
   end)

   it('refuses negative probabilities, pointing at from_logits', function()
      assert.matches(HERE .. 'categorical_cross_entropy: pred %-0%.5 at element 2 of %[1,2%] is negative.*from_logits',
                     err_of(function()
                        local l = nn.categorical_cross_entropy(fnn.tensor{{1.5, -0.5}}, fnn.tensor{{1, 0}})
                        return l
                     end))
      assert.matches(HERE .. 'categorical_cross_entropy: pred %[3,3%] and target %[3,2%] differ in shape',
                     err_of(function() local l = nn.categorical_cross_entropy(probs, fnn.zeros(3, 2)); return l end))
   end)
end)

describe('sparse_categorical_cross_entropy (Keras)', function()
   it('with from_logits equals cross_entropy; classes are the last dim', function()
      local x = fnn.randn(2, 3, 4)                -- [N, T, C]
      local ids = fnn.long{{1, 4, 2}, {3, 3, 1}}  -- [N, T]
      local per = {}
      for n, seq in ipairs(rows_of(x)) do
         for k, row in ipairs(seq) do per[#per + 1] = ce_row(row, ids:to_table()[n][k]) end
      end
      check_reductions(function(r)
         return nn.sparse_categorical_cross_entropy(x, ids, {from_logits = true, reduction = r})
      end, per)
      assert.same({2, 3}, nn.sparse_categorical_cross_entropy(x, ids, {from_logits = true, reduction = 'none'}):shape())
   end)

   it('on probabilities renormalizes and clips, -log p[y]; ignore_class leaves sites out', function()
      local pr = fnn.tensor{{0.5, 0.3, 0.2}, {0.0, 0.4, 0.6}, {0.2, 0.2, 0.4}}
      local pv = rows_of(pr)
      local ids = {1, 1, 3}
      local per = {}
      for i = 1, 3 do
         local s = pv[i][1] + pv[i][2] + pv[i][3]
         per[i] = -log(min(max(pv[i][ids[i]] / s, 1e-7), 1 - 1e-7))
      end
      check_reductions(function(r) return nn.sparse_categorical_cross_entropy(pr, ids, {reduction = r}) end, per, nil,
                       1e-4)
      approx({(per[1] + per[3]) / 2}, nn.sparse_categorical_cross_entropy(pr, {1, 2, 3}, {ignore_class = 2}), 1e-4)
   end)

   it('refuses ids that do not agree with pred', function()
      assert.matches(HERE .. 'sparse_categorical_cross_entropy: pred %[2,3,4%] and targets %[2,4%] do not agree '
                     .. '%(expected targets %[2,3%]',
                     err_of(function()
                        local l = nn.sparse_categorical_cross_entropy(fnn.rand(2, 3, 4), fnn.long{{1, 1, 1, 1}, {1, 1, 1, 1}})
                        return l
                     end))
      assert.matches(HERE .. 'sparse_categorical_cross_entropy: class id 5 outside 1%.%.4',
                     err_of(function()
                        local l = nn.sparse_categorical_cross_entropy(fnn.rand(2, 4), {1, 5}, {from_logits = true})
                        return l
                     end))
   end)
end)

describe('kl_div', function()
   local q = fnn.tensor{{0.2, 0.5, 0.3}, {0.6, 0.3, 0.1}}
   local p = fnn.tensor{{0.1, 0.9, 0.0}, {0.3, 0.3, 0.4}}
   local log_q = q:log()
   local qv, pv = q:to_flat(), p:to_flat()

   it('is p (log p - log_q) pointwise (0 where p = 0), with mean, sum, none and batchmean', function()
      local per = {}
      for i = 1, 6 do per[i] = pv[i] > 0 and pv[i] * (log(pv[i]) - log(qv[i])) or 0 end
      check_reductions(function(r) return nn.kl_div(log_q, p, {reduction = r}) end, per)
      approx({sum(per) / 2}, nn.kl_div(log_q, p, {reduction = 'batchmean'}))
   end)

   it('takes log targets', function()
      local per = {}
      for i = 1, 6 do
         local lt = log(qv[i] * 0.5 + 0.1)
         per[i] = exp(lt) * (lt - log(pv[i] + 0.05))
      end
      local lp = (p + 0.05):log()
      local lt = (q * 0.5 + 0.1):log()
      check_reductions(function(r) return nn.kl_div(lp, lt, {reduction = r, log_target = true}) end, per)
   end)

   it('has gradients matching finite differences in both inputs', function()
      local ok, report = fnn.gradcheck(function(a, b) return nn.kl_div(a, b, {reduction = 'batchmean'}) end,
                                       {fnn.tensor{{-1.2, -0.5}, {-2, -0.3}}, fnn.tensor{{0.3, 0.7}, {0.5, 0.5}}})
      assert(ok, report)
   end)

   it('refuses an unknown reduction, listing batchmean', function()
      assert.matches(HERE .. "kl_div: reduction 'avg' is not one of 'mean', 'sum', 'none', 'batchmean'",
                     err_of(function() local l = nn.kl_div(log_q, p, {reduction = 'avg'}); return l end))
   end)
end)

describe('cosine_embedding', function()
   local a = fnn.tensor{{1, 2, 0}, {0.5, -1, 2}, {3, 0, 1}}
   local b = fnn.tensor{{2, 1, 1}, {1, 1, 1}, {-3, 0.5, -1}}
   local av, bv = rows_of(a), rows_of(b)

   local function cos(u, v)
      local d, nu, nv = 0, 0, 0
      for i = 1, #u do d = d + u[i] * v[i]; nu = nu + u[i] ^ 2; nv = nv + v[i] ^ 2 end
      return d / sqrt((nu + 1e-12) * (nv + 1e-12))
   end

   it('is 1 - cos for y = 1 and max(0, cos - margin) for y = -1', function()
      local y = {1, -1, -1}
      for _, margin in ipairs{0, 0.2, -0.5} do
         local per = {}
         for i = 1, 3 do
            local c = cos(av[i], bv[i])
            per[i] = y[i] == 1 and 1 - c or max(0, c - margin)
         end
         check_reductions(function(r) return nn.cosine_embedding(a, b, y, {margin = margin, reduction = r}) end, per)
         approx({mean(per)}, nn.cosine_embedding(a, b, fnn.long(y), {margin = margin}))
      end
      approx({1 - cos(av[1], bv[1])}, nn.cosine_embedding(fnn.tensor(av[1]), fnn.tensor(bv[1]), 1))
   end)

   it('has gradients matching finite differences', function()
      local ok, report = fnn.gradcheck(function(u, v) return nn.cosine_embedding(u, v, {1, -1}, {margin = -0.9}) end,
                                       {fnn.tensor{{1, 2, 0.5}, {0.5, -1, 2}}, fnn.tensor{{2, 1, 1}, {1, 1, 1}}})
      assert(ok, report)
   end)

   it('refuses targets other than 1 and -1, and shapes that do not agree', function()
      assert.matches(HERE .. 'cosine_embedding: target 0 at element 2 of %[3%] is not 1 or %-1',
                     err_of(function() local l = nn.cosine_embedding(a, b, {1, 0, -1}); return l end))
      assert.matches(HERE .. 'cosine_embedding: inputs %[3,3%] and target %[2%] do not agree %(expected target %[3%]%)',
                     err_of(function() local l = nn.cosine_embedding(a, b, {1, -1}); return l end))
      assert.matches(HERE .. 'cosine_embedding: input1 %[3,3%] and input2 %[3,2%] differ in shape',
                     err_of(function() local l = nn.cosine_embedding(a, fnn.zeros(3, 2), {1, -1, 1}); return l end))
   end)
end)

describe('loss objects', function()
   local x = fnn.randn(4, 3)
   local pr = fnn.rand(4, 3) * 0.8 + 0.1
   local t = fnn.rand(4, 3)
   local ids = {3, 1, 2, 2}
   local onehot = fnn.tensor{{0, 0, 1}, {1, 0, 0}, {0, 1, 0}, {0, 1, 0}}

   it('compute their function with their options, called or through forward', function()
      local cases = {
         {nn.MSELoss(), function() return nn.mse(x, t) end, x, t},
         {nn.MSELoss{reduction = 'sum'}, function() return nn.mse(x, t, {reduction = 'sum'}) end, x, t},
         {nn.L1Loss{reduction = 'none'}, function() return nn.mae(x, t, {reduction = 'none'}) end, x, t},
         {nn.HuberLoss(0.5), function() return nn.huber(x, t, {delta = 0.5}) end, x, t},
         {nn.BCELoss{weight = {1, 2, 3}}, function() return nn.binary_cross_entropy(pr, t, {weight = {1, 2, 3}}) end, pr, t},
         {nn.BCEWithLogitsLoss{pos_weight = {2, 1, 1}}, function()
            return nn.bce_with_logits(x, t, {pos_weight = {2, 1, 1}})
         end, x, t},
         {nn.CrossEntropyLoss{label_smoothing = 0.1, weight = {1, 2, 1}}, function()
            return nn.cross_entropy(x, ids, {label_smoothing = 0.1, weight = {1, 2, 1}})
         end, x, ids},
         {nn.CrossEntropyLoss{ignore_index = 2}, function() return nn.cross_entropy(x, ids, {ignore_index = 2}) end, x, ids},
         {nn.NLLLoss(), function() return nn.nll(x:log_softmax(2), ids) end, x:log_softmax(2), ids},
         {nn.KLDivLoss{reduction = 'batchmean'}, function()
            return nn.kl_div(x:log_softmax(2), pr, {reduction = 'batchmean'})
         end, x:log_softmax(2), pr},
         {nn.CategoricalCrossEntropy{from_logits = true}, function()
            return nn.categorical_cross_entropy(x, onehot, {from_logits = true})
         end, x, onehot},
         {nn.SparseCategoricalCrossEntropy(), function() return nn.sparse_categorical_cross_entropy(pr, ids) end, pr, ids},
         {nn.SparseCategoricalCrossEntropy{from_logits = true, reduction = 'sum_over_batch_size'}, function()
            return nn.cross_entropy(x, ids)
         end, x, ids},
      }
      for i, c in ipairs(cases) do
         local want = c[2]():to_flat()
         approx(want, c[1](c[3], c[4]), 1e-6)
         approx(want, c[1]:forward(c[3], c[4]), 1e-6)
         assert.is_true(nn.Module.is_module(c[1]), 'case ' .. i)
      end
      local cel = nn.CosineEmbeddingLoss{margin = 0.1}
      approx(nn.cosine_embedding(x, t, {1, -1, 1, -1}, {margin = 0.1}):to_flat(), cel(x, t, {1, -1, 1, -1}))
   end)

   it('Keras elementwise losses average over the last dim per sample, then over the samples', function()
      local xv, tv = rows_of(x), rows_of(t)
      local sq, ab, per_sq, per_ab = {}, {}, {}, {}
      for i = 1, 4 do
         per_sq[i], per_ab[i] = 0, 0
         for j = 1, 3 do
            local d = xv[i][j] - tv[i][j]
            sq[#sq + 1], ab[#ab + 1] = d * d, abs(d)
            per_sq[i], per_ab[i] = per_sq[i] + d * d / 3, per_ab[i] + abs(d) / 3
         end
      end
      approx({mean(sq)}, nn.MeanSquaredError()(x, t))
      approx(per_sq, nn.MeanSquaredError{reduction = 'none'}(x, t))
      approx({sum(per_sq)}, nn.MeanSquaredError{reduction = 'sum'}(x, t))
      approx({mean(ab)}, nn.MeanAbsoluteError{reduction = 'sum_over_batch_size'}(x, t))
      approx(per_ab, nn.MeanAbsoluteError{reduction = 'none'}(x, t))
      -- [N] inputs: one loss per element
      approx({0.25, 4}, nn.MeanSquaredError{reduction = 'none'}(fnn.tensor{1, 2}, fnn.tensor{0.5, 0}))
   end)

   it('BinaryCrossEntropy clips probabilities (Keras), or takes logits', function()
      local p = fnn.tensor{{0, 0.3}, {1, 0.8}}
      local y = fnn.tensor{{1, 0}, {0, 1}}
      local pv, yv = p:to_flat(), y:to_flat()
      local per = {}
      local hi = 1 - 2 ^ -23   -- 1 - 1e-7 rounded to float32, as Keras computes it
      for i = 1, 4 do
         local q = min(max(pv[i], 1e-7), hi)
         per[i] = -(yv[i] * log(q) + (1 - yv[i]) * log(1 - q))
      end
      approx({mean(per)}, nn.BinaryCrossEntropy()(p, y), 1e-3)
      approx({(per[1] + per[2]) / 2, (per[3] + per[4]) / 2}, nn.BinaryCrossEntropy{reduction = 'none'}(p, y), 1e-3)
      local logits = fnn.tensor{{2, -1}, {0.5, 3}}
      approx(nn.bce_with_logits(logits, y):to_flat(), nn.BinaryCrossEntropy{from_logits = true}(logits, y))
      local smoothed = y * 0.8 + 0.1
      approx(nn.bce_with_logits(logits, smoothed):to_flat(),
             nn.BinaryCrossEntropy{from_logits = true, label_smoothing = 0.2}(logits, y), 1e-6)
   end)

   it('keep tensor options as buffers and print their options', function()
      local crit = nn.CrossEntropyLoss{weight = {1, 2, 3}, label_smoothing = 0.1}
      assert.equals('nn.CrossEntropyLoss(weight=[3], label_smoothing=0.1)', tostring(crit))
      assert.equals('weight', crit:named_buffers()[1][1])
      assert.same({}, crit:parameters())
      assert.equals('nn.MSELoss()', tostring(nn.MSELoss()))
      assert.equals('nn.HuberLoss(delta=2)', tostring(nn.HuberLoss{delta = 2}))
      assert.equals("nn.KLDivLoss(reduction='batchmean')", tostring(nn.KLDivLoss{reduction = 'batchmean'}))
      assert.equals('nn.BinaryCrossEntropy(from_logits=true)', tostring(nn.BinaryCrossEntropy{from_logits = true}))
      assert.equals('nn.CosineEmbeddingLoss(margin=0.5)', tostring(nn.CosineEmbeddingLoss(0.5)))
      assert.equals('nn.BCEWithLogitsLoss(pos_weight=[2])', tostring(nn.BCEWithLogitsLoss{pos_weight = {1, 2}}))
   end)

   it('refuse unknown options and reductions when made, bad inputs when called, at the caller\'s line', function()
      assert.matches(HERE .. "nn.CrossEntropyLoss: unknown option 'smoothing' %(options: label_smoothing, ignore_index, "
                     .. 'reduction, weight%)',
                     err_of(function() local c = nn.CrossEntropyLoss{smoothing = 0.1}; return c end))
      assert.matches(HERE .. "nn.MSELoss: reduction 'avg' is not one of 'mean', 'sum', 'none'",
                     err_of(function() local c = nn.MSELoss{reduction = 'avg'}; return c end))
      assert.matches(HERE .. 'nn.MSELoss: options must be a table, got a number',
                     err_of(function() local c = nn.MSELoss(3); return c end))
      local crit = nn.CrossEntropyLoss()
      assert.matches(HERE .. 'cross_entropy: class id 4 outside 1%.%.3 %(row 1 of targets %[4%]%)',
                     err_of(function() local l = crit(x, {4, 1, 1, 1}); return l end))
      assert.matches(HERE .. 'cross_entropy: logits %[4,3%] and targets %[2%] do not agree',
                     err_of(function() local l = crit:forward(x, {1, 1}); return l end))
      assert.matches(HERE .. 'binary_cross_entropy: input %-?%d',
                     err_of(function() local l = nn.BCELoss()(x * 10, t); return l end))
      assert.matches(HERE .. 'mse: prediction %[4,3%] and target %[3%] differ in shape',
                     err_of(function() local l = nn.MeanSquaredError()(x, fnn.zeros(3)); return l end))
      assert.matches(HERE .. 'cosine_embedding: target 2 at element 1',
                     err_of(function() local l = nn.CosineEmbeddingLoss()(x, t, {2, 1, 1, 1}); return l end))
   end)

   it('train a model: the loss falls', function()
      fnn.manual_seed(3)
      local model = nn.Linear(3, 3)
      local crit = nn.CrossEntropyLoss{label_smoothing = 0.05}
      local opt = fnn.optim.SGD(model:parameters(), 0.5)
      local data = fnn.randn(16, 3)
      local labels = data:argmax(2)
      local first, last
      for step = 1, 30 do
         opt:zero_grad()
         local l = crit(model(data), labels)
         l:backward()
         opt:step()
         if step == 1 then first = l:item() end
         last = l:item()
      end
      assert.is_true(last < first * 0.7, ('loss %.4f -> %.4f'):format(first, last))
   end)
end)
