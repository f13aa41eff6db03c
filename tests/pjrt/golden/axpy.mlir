module @axpy attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<6xf32> {tf.aliasing_output = 0 : i32}, %arg1: tensor<6xf32>, %arg2: tensor<1xf32>) -> (tensor<6xf32>) {
    %1 = "stablehlo.reshape"(%arg2) : (tensor<1xf32>) -> tensor<f32>
    // #0 broadcast_in_dim
    %2 = "stablehlo.broadcast_in_dim"(%1) {broadcast_dimensions = array<i64>} : (tensor<f32>) -> tensor<6xf32>
    // #1 multiply
    %3 = "stablehlo.multiply"(%arg1, %2) : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
    // #2 add
    %4 = "stablehlo.add"(%arg0, %3) : (tensor<6xf32>, tensor<6xf32>) -> tensor<6xf32>
    "func.return"(%4) : (tensor<6xf32>) -> ()
  }
}
