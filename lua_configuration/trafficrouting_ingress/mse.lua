-- Canary annotations for Alibaba Cloud MSE Ingress: the ingress-nginx canary annotations plus MSE's query
-- parameter matching, request header control and service subsets.
--
-- obj.annotations            current annotations of the canary Ingress
-- obj.weight                 percentage of traffic for the canary, as a string; "-1" when the step sets none
-- obj.matches                HttpRouteMatch list: {path, headers = {{type, name, value}}, queryParams}
-- obj.requestHeaderModifier  {set = {{name, value}}, add, remove}; only set is supported
-- Returns the complete new annotation map. Every canary key is recomputed, so nothing set by an earlier
-- step lingers.

local nginx = "nginx.ingress.kubernetes.io/"
local mse = "mse.ingress.kubernetes.io/"
local canaryKeys = {
  nginx .. "canary-by-cookie", nginx .. "canary-by-header", nginx .. "canary-by-header-pattern",
  nginx .. "canary-by-header-value", nginx .. "canary-weight",
  nginx .. "canary-by-query", nginx .. "canary-by-query-pattern", nginx .. "canary-by-query-value",
  mse .. "canary-by-query", mse .. "canary-by-query-pattern", mse .. "canary-by-query-value",
}

local annotations = {}
for key, value in pairs(obj.annotations or {}) do
  annotations[key] = value
end
for _, key in ipairs(canaryKeys) do
  annotations[key] = nil
end

annotations[nginx .. "canary"] = "true"
if obj.weight ~= nil and obj.weight ~= "-1" then
  annotations[nginx .. "canary-weight"] = obj.weight
end
-- A stable Ingress that routes to a service subset sends the canary to the "gray" subset.
if annotations[mse .. "service-subset"] ~= nil then
  annotations[mse .. "service-subset"] = "gray"
end

-- MSE takes one "<name> <value>" pair per line.
local modifier = obj.requestHeaderModifier
if modifier and modifier.set and #modifier.set > 0 then
  local lines = {}
  for _, header in ipairs(modifier.set) do
    table.insert(lines, header.name .. " " .. header.value)
  end
  annotations[mse .. "request-header-control-update"] = table.concat(lines, "\n")
end

-- One cookie, one header and one query parameter per canary Ingress: a match contributes its first header
-- and its first query parameter, and with several matches the last one wins.
local function setRule(kind, rule)
  annotations[nginx .. "canary-by-" .. kind] = rule.name
  local regex = rule.type == "RegularExpression"
  annotations[nginx .. "canary-by-" .. kind .. "-pattern"] = regex and rule.value or nil
  annotations[nginx .. "canary-by-" .. kind .. "-value"] = (not regex) and rule.value or nil
end

for _, match in ipairs(obj.matches or {}) do
  local header = match.headers and match.headers[1]
  if header and header.name == "canary-by-cookie" then
    annotations[nginx .. "canary-by-cookie"] = header.value
  elseif header then
    setRule("header", header)
  end
  local query = match.queryParams and match.queryParams[1]
  if query then
    setRule("query", query)
  end
end

return annotations
