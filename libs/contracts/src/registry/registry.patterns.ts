/**
 * Message and event patterns of the registry microservice. The deployment namespace is part of each
 * pattern, so two stacks sharing one Redis never answer each other's requests.
 */
export function registryPatterns(namespace: string) {
  return {
    /** event, worker → registry, every heartbeat interval */
    heartbeat: `${namespace}.registry.heartbeat`,
    /** event, worker → registry, on graceful shutdown */
    deregister: `${namespace}.registry.deregister`,
    /** request/response, gateway → registry: `ModelEntry[]` of declared models */
    listModels: `${namespace}.registry.models.list`,
    /** request/response, gateway → registry: `ModelLookup` for one id */
    getModel: `${namespace}.registry.models.get`,
  } as const;
}

export type RegistryPatterns = ReturnType<typeof registryPatterns>;
