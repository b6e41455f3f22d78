/** The matrix columns, in report order. */
import { confluentKjsClient } from '../clients/confluent/driver-kafkajs.mjs';
import { confluentRdkafkaClient } from '../clients/confluent/driver-rdkafka.mjs';
import { kafkaPython010Client, kafkaPythonClient } from '../clients/kafka-python/driver.js';
import { kafkajsClient } from '../clients/kafkajs/driver.js';
import { kcatClient } from '../clients/kcat/driver.js';
import type { Client } from './types.js';

export const CLIENTS: Client[] = [
  kafkajsClient,
  confluentKjsClient,
  confluentRdkafkaClient,
  kcatClient,
  kafkaPythonClient,
  kafkaPython010Client,
];
