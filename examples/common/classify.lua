-- common.classify: evaluation of a classifier over a dataset, in eval mode and without a graph.
--   local r = classify.evaluate(model, test_set, {classes = 10})
--   r.accuracy (0..1), r.loss (mean cross-entropy), r.confusion (rows = true class, columns = predicted)
local fnn = require 'fastnn'
local nn, data = fnn.nn, fnn.data

local M = {}

function M.evaluate(model, ds, opts)
   opts = opts or {}
   local k = opts.classes or 10
   local confusion = {}
   for i = 1, k do
      confusion[i] = {}
      for j = 1, k do confusion[i][j] = 0 end
   end
   local was_training = model.training
   model:eval()
   local correct, loss_sum = 0, 0
   fnn.no_grad(function()
      for batch in data.DataLoader(ds, opts.batch_size or 1000):iter() do
         local logits = model(batch.inputs)
         loss_sum = loss_sum + nn.cross_entropy(logits, batch.targets):item() * batch.size
         local predicted, truth = logits:argmax(2):to_table(), batch.targets:to_table()
         for i = 1, #truth do
            local t, p = truth[i], predicted[i]
            confusion[t][p] = confusion[t][p] + 1
            if t == p then correct = correct + 1 end
         end
      end
   end)
   model:train(was_training)
   return {accuracy = correct / ds:len(), loss = loss_sum / ds:len(), confusion = confusion}
end

return M
