/** gregor's embedded API: `const broker = await startBroker({ port: 0 }); … await broker.stop()`. */
export { Broker, type BrokerOptions, startBroker } from './broker.js';
export { BrokerConfig, ConfigError } from './config.js';
export {
  FaultInjector,
  FaultRuleError,
  parseFaultRules,
  type FaultAction,
  type FaultHandle,
  type FaultInfo,
  type FaultInjectorOptions,
  type FaultRequestInfo,
  type FaultRule,
  type FaultWhen,
} from './network/faults.js';
