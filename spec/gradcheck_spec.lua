-- Every registered differentiable op is checked against central finite
-- differences of its own forward. The op list comes from the core's registry;
-- an op without a case in spec/cases/<family>.lua fails here.
local fnn = require 'fastnn'

local cases_by_op = {}
for family in pairs(fnn.op_families) do
   local ok, cases = pcall(require, 'cases.' .. family)
   if ok then
      for _, case in ipairs(cases) do
         case.family = family
         cases_by_op[case.op] = cases_by_op[case.op] or {}
         table.insert(cases_by_op[case.op], case)
      end
   end
end

describe('gradcheck', function()
   for _, op in ipairs(fnn.ops()) do
      if op.differentiable then
         it(op.family .. '.' .. op.name .. ' has a gradient matching finite differences', function()
            local cases = cases_by_op[op.name]
            assert(cases, ('no gradcheck case for %s; add one to spec/cases/%s.lua'):format(op.name, op.family))
            for i, case in ipairs(cases) do
               if case.requires == 'cuda' and not fnn.Device.cuda(0) then
                  -- no GPU here: the case cannot run, so check the reason given instead
                  local dev, why = fnn.Device.cuda(0)
                  assert.is_nil(dev)
                  assert.matches('cuda:0 is not available', why)
                  goto continue
               end
               if case.gradcheck == false then goto continue end   -- a values-only case
               fnn.manual_seed(100 + i)
               local ok, report = fnn.gradcheck(case.fn, {case.inputs()},
                                                {eps = case.eps or 1e-3, atol = case.atol or 2e-2,
                                                 rtol = case.rtol or 2e-2})
               assert(ok, ('%s case %d:\n%s'):format(op.name, i, tostring(report)))
               ::continue::
            end
         end)
      end
   end

   it('refuses a case list that names an op the core does not have', function()
      local known = {}
      for _, op in ipairs(fnn.ops()) do known[op.name] = true end
      for name in pairs(cases_by_op) do
         assert(known[name], 'spec/cases names unknown op ' .. name)
      end
   end)

   it('reports a wrong gradient', function()
      -- a deliberately wrong "op": the forward is x^2 but the graph computes 3x
      local ok, report = fnn.gradcheck(function(x)
         if fnn.is_grad_enabled() then return x * 3 end
         return x * x
      end, {fnn.tensor{1, 2}})
      assert.is_false(ok)
      assert.matches('input 1 element 1', report)
   end)
end)
