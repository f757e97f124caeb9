export { ControllerMetrics, type ControllerMetricsOptions, type PoolStats, type RequestSample } from './controller-metrics';
export { createRouterMetrics, type RoutedRequestSample, type RouterMetrics } from './router-metrics';
export { createAcmeMetrics, type AcmeMetricsSource } from './acme-metrics';
