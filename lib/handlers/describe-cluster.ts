/**
 * DescribeCluster (key 60) v0–1: the live brokers (one node: this one) and the controller clients see
 * (one node: this one; a cluster: the one elected through etcd). v1 asks for broker (1) or controller
 * (2) endpoints; a broker serves only the former.
 */
import { ApiKey } from '../../protocol/generated/api-keys.js';
import type { DescribeClusterRequest, DescribeClusterResponse } from '../../protocol/generated/describe-cluster.js';
import { ErrorCode } from '../../protocol/generated/error-codes.js';
import { controllerId, liveBrokers } from './cluster-view.js';
import { AUTHORIZED_OPERATIONS_OMITTED, authorizedOperations, ResourceType } from '../security/acl/checks.js';
import { CLUSTER_NAME } from '../security/acl/types.js';
import { defineHandler } from './types.js';

export const EndpointType = { UNKNOWN: 0, BROKER: 1, CONTROLLER: 2 } as const;

export const describeClusterHandler = defineHandler<DescribeClusterRequest, DescribeClusterResponse>({
  apiKey: ApiKey.DescribeCluster,
  minVersion: 0,
  maxVersion: 1,
  handle(req, ctx) {
    const s = ctx.services;
    const v = ctx.apiVersion;
    const endpointType = v >= 1 ? (req.endpointType ?? EndpointType.BROKER) : EndpointType.BROKER;
    const res: DescribeClusterResponse = {
      throttleTimeMs: 0,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
      clusterId: s.clusterId,
      controllerId: controllerId(s),
      brokers: [],
      clusterAuthorizedOperations: req.includeClusterAuthorizedOperations
        ? authorizedOperations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)
        : AUTHORIZED_OPERATIONS_OMITTED,
    };
    if (v >= 1) res.endpointType = endpointType;
    if (endpointType !== EndpointType.BROKER) {
      res.errorCode = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE;
      const wanted = endpointType === EndpointType.CONTROLLER ? 'CONTROLLER' : 'UNKNOWN';
      res.errorMessage = `The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type ${wanted}`;
      res.controllerId = -1;
      res.clusterAuthorizedOperations = AUTHORIZED_OPERATIONS_OMITTED;
      return res;
    }
    for (const b of liveBrokers(s, ctx.conn.listenerName))
      res.brokers.push({ brokerId: b.nodeId, host: b.host, port: b.port, rack: b.rack });
    return res;
  },
  errorResponse(req, errorCode, ctx) {
    const res: DescribeClusterResponse = {
      throttleTimeMs: 0,
      errorCode,
      errorMessage: null,
      clusterId: ctx.services.clusterId,
      controllerId: -1,
      brokers: [],
      clusterAuthorizedOperations: AUTHORIZED_OPERATIONS_OMITTED,
    };
    if (ctx.apiVersion >= 1) res.endpointType = req.endpointType ?? EndpointType.BROKER;
    return res;
  },
});
