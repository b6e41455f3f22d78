/** What the share-group offset admin APIs answer, as the raw-frame tests read it (DescribeShareGroupOffsets v1, Alter/DeleteShareGroupOffsets v0). */
export interface DescribedOffsets {
  groups: {
    groupId: string;
    errorCode: number;
    topics: { topicName: string; partitions: { partitionIndex: number; startOffset: bigint; lag: bigint; errorCode: number }[] }[];
  }[];
}

export interface OffsetsChange {
  errorCode: number;
  errorMessage: string | null;
  responses: { topicName: string; errorCode?: number; partitions?: { partitionIndex: number; errorCode: number }[] }[];
}
