-- Istio VirtualService.
--
-- obj.data                   {spec, labels, annotations} of the VirtualService before any release
-- obj.canaryWeight           percentage of traffic for the canary; -1 when the step sets none
-- obj.stableWeight           100 - canaryWeight
-- obj.matches                HttpRouteMatch list: {path = {type, value}, headers, queryParams}
-- obj.stableService          stable Service name
-- obj.canaryService          canary Service name; equal to stableService when a DestinationRule subset
--                            selects the canary pods
-- obj.requestHeaderModifier  {set = {{name, value}}, add = {{name, value}}, remove = {names}}
-- Returns {spec, labels, annotations}. The result depends only on the inputs, so recomputing it from the
-- original object is idempotent.
--
-- With matches, one http route per match is put in front of the existing ones, sending matching requests to
-- the canary. Otherwise every http, tcp and tls rule without a match condition that routes to the stable
-- Service gets its weights scaled to stableWeight and a canary destination with canaryWeight.

local spec = obj.data.spec
local stable, canary = obj.stableService, obj.canaryService
local canaryWeight, stableWeight = obj.canaryWeight, obj.stableWeight
if canaryWeight == -1 then
  canaryWeight, stableWeight = 100, 0
end

local function canaryDestination()
  if canary == stable then
    return {host = stable, subset = "canary"}
  end
  return {host = canary}
end

-- Destinations name a Service by short name or by FQDN (name.namespace.svc...).
local function routesToStable(route)
  local host = route.destination and route.destination.host or ""
  local dot = string.find(host, ".", 1, true)
  return (dot and string.sub(host, 1, dot - 1) or host) == stable
end

local matchKinds = {Exact = "exact", RegularExpression = "regex", PathPrefix = "prefix", Prefix = "prefix"}

local function stringMatch(rule, defaultType)
  return {[matchKinds[rule.type or defaultType] or "exact"] = rule.value}
end

-- Absent lists are skipped rather than iterated as new empty tables (here and below): every table a script
-- makes is garbage for the manager to collect.
local function addRules(result, field, rules)
  if not rules then
    return
  end
  for _, rule in ipairs(rules) do
    result[field] = result[field] or {}
    result[field][rule.name] = stringMatch(rule, "Exact")
  end
end

local function istioMatch(match)
  local result = {}
  if match.path then
    result.uri = stringMatch(match.path, "PathPrefix")
  end
  addRules(result, "headers", match.headers)
  addRules(result, "queryParams", match.queryParams)
  return result
end

local function headerOperations(modifier)
  if not modifier then
    return nil
  end
  local request = {}
  for _, action in ipairs({"set", "add"}) do
    for _, header in ipairs(modifier[action] or {}) do
      request[action] = request[action] or {}
      request[action][header.name] = header.value
    end
  end
  if modifier.remove and #modifier.remove > 0 then
    request.remove = modifier.remove
  end
  if next(request) == nil then
    return nil
  end
  return {request = request}
end

local function prependMatchRoutes(matches)
  spec.http = spec.http or {}
  for i = #matches, 1, -1 do
    table.insert(spec.http, 1, {
      match = {istioMatch(matches[i])},
      headers = headerOperations(obj.requestHeaderModifier),
      route = {{destination = canaryDestination()}},
    })
  end
end

-- Scales the rule's weights (absent weights share 100 evenly) to stableWeight; the rounding remainder goes
-- to the first destination so a rule summing to 100 still does with the canary added.
local function scaleWeights(routes)
  local total, scaled = 0, 0
  for _, route in ipairs(routes) do
    local weight = route.weight or 100 / #routes
    total = total + weight
    route.weight = math.floor(weight * stableWeight / 100)
    scaled = scaled + route.weight
  end
  if math.abs(total - 100) < 1e-9 and #routes > 0 then
    routes[1].weight = routes[1].weight + stableWeight - scaled
  end
end

local function splitRule(rule)
  if rule.match ~= nil or not rule.route then
    return
  end
  for _, route in ipairs(rule.route) do
    if routesToStable(route) then
      scaleWeights(rule.route)
      table.insert(rule.route, {destination = canaryDestination(), weight = canaryWeight})
      return
    end
  end
end

if obj.matches and #obj.matches > 0 then
  prependMatchRoutes(obj.matches)
else
  for _, protocol in ipairs({"http", "tcp", "tls"}) do
    if spec[protocol] then
      for _, rule in ipairs(spec[protocol]) do
        splitRule(rule)
      end
    end
  end
end

return obj.data
