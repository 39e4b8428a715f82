-- common.cli: the command line every example shares, so all of them parse the same way.
--   package.path = (arg[0]:match('^(.*)/') or '.') .. '/?.lua;' .. package.path
--   local cli = require 'common.cli'
--   local opts = cli.parse{
--      name = 'mnist_mlp', about = 'one line saying what the example shows',
--      options = { {'epochs', 10, 'passes over the training set'}, {'resume', false, 'continue from the checkpoint'},
--                  {'text', 'examples/data/x.txt', 'the corpus', 'FILE'} },   -- 4th: the value's name in --help
--      quick = {epochs = 1},                       -- what --quick changes (unless given explicitly)
--   }
--   opts.epochs, opts.resume, opts.quick, opts.out, opts.seed
-- Options every example has: --quick (a run of a few seconds, for CI), --help, --out DIR (where
-- pictures and checkpoints go, default ./fastnn-out), --seed N. An option's default gives its type:
-- a number takes a number, a string a word, false a flag. `--name value` and `--name=value` both
-- work, and a dash in a name is an underscore in opts (--save-every -> opts.save_every).
-- --help prints the usage and exits 0; a bad command line prints it to stderr and exits 2.
-- parse also makes stdout line-buffered, so progress shows at once through a pipe or in a log.
local M = {}

local COMMON = {
   {'quick', false, 'a short run (seconds) for CI: small data, few steps'},
   {'out', 'fastnn-out', 'directory for pictures and checkpoints', 'DIR'},
   {'seed', 1, 'random seed (fnn.manual_seed)'},
   {'help', false, 'print this help and exit'},
}

local function usage(spec, list)
   local lines = {('usage: fastnn-lua examples/%s.lua [options]'):format(spec.name), '', spec.about, '', 'options:'}
   for _, o in ipairs(list) do
      local name, default, help = o[1], o[2], o[3]
      local flag = '--' .. name:gsub('_', '-')
      if type(default) ~= 'boolean' then flag = flag .. ' ' .. (o[4] or type(default) == 'number' and 'N' or 'S') end
      local extra = ''
      if type(default) ~= 'boolean' and default ~= '' then extra = (' (default %s'):format(tostring(default)) end
      local q = spec.quick and spec.quick[name]
      if q ~= nil then extra = extra .. (extra == '' and ' (' or ', ') .. ('--quick: %s'):format(tostring(q)) end
      if extra ~= '' then extra = extra .. ')' end
      lines[#lines + 1] = ('  %-22s %s%s'):format(flag, help, extra)
   end
   return table.concat(lines, '\n') .. '\n'
end

local function fail(spec, list, msg)
   io.stderr:write(('%s: %s\n\n%s'):format(spec.name, msg, usage(spec, list)))
   os.exit(2)
end

-- opts from argv (default: the script's global arg)
function M.parse(spec, argv)
   argv = argv or arg or {}
   local list, by_name = {}, {}
   for _, o in ipairs(spec.options or {}) do list[#list + 1] = o end
   for _, o in ipairs(COMMON) do list[#list + 1] = o end
   for _, o in ipairs(list) do by_name[o[1]] = o end

   local opts, given = {}, {}
   for _, o in ipairs(list) do opts[o[1]] = o[2] end
   local i = 1
   while argv[i] ~= nil do
      local a = argv[i]
      local key, value = a:match('^%-%-([%w%-]+)=(.*)$')
      key = key or a:match('^%-%-([%w%-]+)$')
      if not key then fail(spec, list, ("unexpected argument '%s'"):format(a)) end
      local name = key:gsub('%-', '_')
      local o = by_name[name]
      if not o then fail(spec, list, ("unknown option '--%s'"):format(key)) end
      if type(o[2]) == 'boolean' then
         if value ~= nil then fail(spec, list, ("--%s is a flag and takes no value"):format(key)) end
         opts[name] = true
      else
         if value == nil then
            i = i + 1
            value = argv[i]
            if value == nil then fail(spec, list, ('--%s needs a value'):format(key)) end
         end
         if type(o[2]) == 'number' then
            local n = tonumber(value)
            if not n then fail(spec, list, ("--%s takes a number, got '%s'"):format(key, value)) end
            opts[name] = n
         else
            opts[name] = value
         end
      end
      given[name] = true
      i = i + 1
   end
   if opts.help then
      io.stdout:write(usage(spec, list))
      os.exit(0)
   end
   io.stdout:setvbuf('line')
   if opts.quick then
      for k, v in pairs(spec.quick or {}) do
         if not given[k] then opts[k] = v end
      end
   end
   return opts
end

return M
