module @qr attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<12xf32>) -> (tensor<12xf32>, tensor<9xf32>) {
    %1 = "stablehlo.reshape"(%arg0) : (tensor<12xf32>) -> tensor<4x3xf32>
    // #0 qr
    %2:2 = stablehlo.custom_call @lapack_sgeqrf_ffi(%1) {backend_config = "", mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0]> : tensor<1xindex>]} : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>)
    %3 = "stablehlo.slice"(%2#0) {start_indices = array<i64: 0, 0>, limit_indices = array<i64: 3, 3>, strides = array<i64: 1, 1>} : (tensor<4x3xf32>) -> tensor<3x3xf32>
    %4 = "stablehlo.iota"() {iota_dimension = 0 : i64} : () -> tensor<3x3xi64>
    %5 = "stablehlo.iota"() {iota_dimension = 1 : i64} : () -> tensor<3x3xi64>
    %6 = "stablehlo.compare"(%4, %5) {comparison_direction = #stablehlo<comparison_direction LE>, compare_type = #stablehlo<comparison_type SIGNED>} : (tensor<3x3xi64>, tensor<3x3xi64>) -> tensor<3x3xi1>
    %7 = "stablehlo.constant"() {value = dense<0.0> : tensor<3x3xf32>} : () -> tensor<3x3xf32>
    %8 = "stablehlo.select"(%6, %3, %7) : (tensor<3x3xi1>, tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %9 = stablehlo.custom_call @lapack_sorgqr_ffi(%2#0, %2#1) {backend_config = "", mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0]> : tensor<1xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>]} : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %10 = "stablehlo.reshape"(%9) : (tensor<4x3xf32>) -> tensor<12xf32>
    %11 = "stablehlo.reshape"(%8) : (tensor<3x3xf32>) -> tensor<9xf32>
    "func.return"(%10, %11) : (tensor<12xf32>, tensor<9xf32>) -> ()
  }
}
